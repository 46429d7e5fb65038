// NameThread: names the calling thread, as top -H, perf and gdb show it.
// Header-only, so every fs/ library can use it without linking fs/core.
#pragma once

#include <pthread.h>

namespace clairfs::fs {

// `name` has at most 15 characters (the kernel's limit); longer is ignored.
inline void NameThread(const char* name) { ::pthread_setname_np(::pthread_self(), name); }

}  // namespace clairfs::fs
