// NameThread: names the calling thread, as top -H, perf and gdb show it.
// Header-only.
#pragma once

#include <pthread.h>

namespace clairfs {

// `name` has at most 15 characters (the kernel's limit); longer is ignored.
inline void NameThread(const char* name) { ::pthread_setname_np(::pthread_self(), name); }

}  // namespace clairfs
