// Launching the kernels of a module compiled for the host from Python (tests/host_runtime.py):
// fv_launch(name, grid, block, args) runs kernel `name` as CUDA's launch API does, args[i]
// pointing at the i-th argument's value (a device pointer or a scalar), its type the
// kernel's parameter type. host_runtime.py appends one FVSWE_KERNEL(name) line per kernel.
#pragma once
#include <cstring>
#include <type_traits>
#include <utility>

template <typename... P, size_t... I>
void fv_launch_unpacked(void (*k)(P...), unsigned grid, unsigned block, void** args,
                        std::index_sequence<I...>)
{
    launch(grid, block, k, *static_cast<std::remove_cv_t<std::remove_reference_t<P>>*>(args[I])...);
}

template <typename... P> void fv_launch_kernel(void (*k)(P...), unsigned grid, unsigned block, void** args)
{
    fv_launch_unpacked(k, grid, block, args, std::index_sequence_for<P...>{});
}

#define FVSWE_KERNEL(name)                                                                    \
    if (std::strcmp(kernel, #name) == 0) {                                                    \
        fv_launch_kernel(name, grid, block, args);                                            \
        return 0;                                                                             \
    }
