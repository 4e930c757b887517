// The host drivers' input (driver.cpp, ranks.cpp): arrays and kernel plans from stdin.
#pragma once
#include <array>
#include <cstdio>
#include <cstdlib>
#include <vector>

template <typename T> static std::vector<T> input(size_t n)
{
    std::vector<T> v(n);
    if (fread(v.data(), sizeof(T), n, stdin) != n) std::exit(2);
    return v;
}

typedef std::vector<std::array<int, 4>> Plan;

static Plan input_plan()
{
    const int n = input<int>(1)[0];
    const auto rows = input<int>(4 * size_t(n));
    Plan plan(n);
    for (int i = 0; i < n; ++i) plan[i] = {rows[4 * i], rows[4 * i + 1], rows[4 * i + 2], rows[4 * i + 3]};
    return plan;
}
