// The shared library is made of the static libraries linked whole; CMake wants one source.
