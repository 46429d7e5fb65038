# Fills base/build_info.cpp.in: what `clairfs-* --version` prints (base/
# version.hpp). Included by the top-level CMakeLists.txt after MPI, libfuse,
# zstd and xxhash were found; the result is one generated source of
# clairfs_base, so every binary prints the same text.

# The commit, only when the source tree is itself a git checkout (a release
# tarball unpacked inside some other repository must not take its commit);
# "+changes" when tracked files differ from it. -DCLAIRFS_GIT_COMMIT=... sets
# it by hand (a packager that knows it).
if(NOT CLAIRFS_GIT_COMMIT)
  set(CLAIRFS_GIT_COMMIT unknown)
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${CMAKE_SOURCE_DIR} rev-parse --show-toplevel
                    OUTPUT_VARIABLE top RESULT_VARIABLE rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(rc EQUAL 0)
      file(REAL_PATH "${top}" top)
      file(REAL_PATH "${CMAKE_SOURCE_DIR}" src)
    endif()
    if(rc EQUAL 0 AND top STREQUAL src)
      execute_process(COMMAND ${GIT_EXECUTABLE} -C ${CMAKE_SOURCE_DIR} rev-parse --short=12 HEAD
                      OUTPUT_VARIABLE commit RESULT_VARIABLE rc ERROR_QUIET
                      OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(rc EQUAL 0)
        set(CLAIRFS_GIT_COMMIT ${commit})
        execute_process(COMMAND ${GIT_EXECUTABLE} -C ${CMAKE_SOURCE_DIR} diff --quiet HEAD --
                        RESULT_VARIABLE dirty ERROR_QUIET)
        if(NOT dirty EQUAL 0)
          string(APPEND CLAIRFS_GIT_COMMIT "+changes")
        endif()
      endif()
    endif()
  endif()
endif()

set(CLAIRFS_BUILD_TYPE ${CMAKE_BUILD_TYPE})
# Sanitizers: whatever -fsanitize= the flags of this build type carry.
string(TOUPPER "${CMAKE_BUILD_TYPE}" type_upper)
string(REGEX MATCHALL "-fsanitize=[^ ]+" sanitizers
       "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${type_upper}}")
if(CLAIRFS_FUZZ)
  list(APPEND sanitizers "-fsanitize=address,undefined")
endif()
list(TRANSFORM sanitizers REPLACE "-fsanitize=" "")
list(REMOVE_DUPLICATES sanitizers)
if(sanitizers)
  string(JOIN "," CLAIRFS_SANITIZERS ${sanitizers})
else()
  set(CLAIRFS_SANITIZERS off)
endif()
if(CLAIRFS_FUZZ)
  set(CLAIRFS_FUZZ_TEXT on)
else()
  set(CLAIRFS_FUZZ_TEXT off)
endif()

# The MPI library: the first line of MPI_Get_library_version (e.g. "MPICH
# Version: 4.0.2"), and the compiler wrapper the build took it from.
set(CLAIRFS_MPI_TEXT "${MPI_CXX_LIBRARY_VERSION_STRING}")
string(REGEX REPLACE "[\r\n].*" "" CLAIRFS_MPI_TEXT "${CLAIRFS_MPI_TEXT}")
string(REGEX REPLACE "[ \t]+" " " CLAIRFS_MPI_TEXT "${CLAIRFS_MPI_TEXT}")
string(STRIP "${CLAIRFS_MPI_TEXT}" CLAIRFS_MPI_TEXT)
if(NOT CLAIRFS_MPI_TEXT)
  set(CLAIRFS_MPI_TEXT "MPI ${MPI_CXX_VERSION}")
endif()
if(MPI_CXX_COMPILER)
  string(APPEND CLAIRFS_MPI_TEXT " (${MPI_CXX_COMPILER})")
endif()
string(REPLACE "\"" "'" CLAIRFS_MPI_TEXT "${CLAIRFS_MPI_TEXT}")

configure_file(${CMAKE_SOURCE_DIR}/base/build_info.cpp.in
               ${CMAKE_BINARY_DIR}/generated/base/build_info.cpp @ONLY)
