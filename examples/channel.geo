// The channel of the two-layer guide (docs/guide/two-layer.md): 2000 m x 400 m, fresh water
// from a river at its west end (x = 0), the sea at its east end (x = 2000), shores north and
// south. Mesh it with gmsh:  gmsh -2 examples/channel.geo -o examples/channel.msh
// The physical groups' names are the boundary tags a case file gives conditions to.
size = 50.0;  // the triangles' edge length (m)
Point(1) = {0, 0, 0, size};
Point(2) = {2000, 0, 0, size};
Point(3) = {2000, 400, 0, size};
Point(4) = {0, 400, 0, size};
Line(1) = {1, 2};  // south shore
Line(2) = {2, 3};  // sea
Line(3) = {3, 4};  // north shore
Line(4) = {4, 1};  // river
Curve Loop(1) = {1, 2, 3, 4};
Plane Surface(1) = {1};
Physical Curve("river") = {4};
Physical Curve("sea") = {2};
Physical Curve("shore") = {1, 3};
Physical Surface("water") = {1};
Mesh.MshFileVersion = 2.2;
