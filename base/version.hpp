// What this build is, as `PROG --version` prints it for every binary (the
// command-line front, base/cli.hpp, answers --version with it): the project's
// version, the git commit the build was configured from ("unknown" outside a
// git checkout, e.g. from a release tarball) and the options it was built
// with (build type, compiler, sanitizers, fuzzing, the MPI library, libfuse,
// zstd). The text is fixed when CMake configures the build (base/
// build_info.cpp.in, filled by base/build_info.cmake). Thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace clairfs {

// "PROG VERSION (commit C)" and one line per group of build options, each
// line ending in '\n'.
std::string VersionText(std::string_view prog);

// The project's version alone, e.g. "0.1.0".
std::string_view Version();

}  // namespace clairfs
