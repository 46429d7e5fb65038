// The daemon's CPU time, for stats.json's `cpu` section: the process's user
// and system seconds (every thread, ended ones included) and, for the threads
// alive now, their seconds summed by thread name (NameThread), so a slow first
// epoch can be traced to staging, fetching, serving peers or FUSE.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.hpp"

namespace clairfs::fs {

struct ThreadCpu {
  std::string name;
  uint32_t count = 0;  // live threads of that name
  double user_s = 0;
  double system_s = 0;
};

// From one /proc/<pid>/task/<tid>/stat line: the thread's name and its user
// and system times in clock ticks. False if the line does not parse.
bool ParseTaskStat(std::string_view line, std::string* name, uint64_t* user_ticks,
                   uint64_t* system_ticks);

// This process's live threads, summed by name, sorted by name.
std::vector<ThreadCpu> ThreadCpuByName();

// Writes `user_s`, `system_s` and `threads` into the open object.
void WriteCpuStats(clairfs::JsonWriter& w);

}  // namespace clairfs::fs
