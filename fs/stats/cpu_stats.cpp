#include "fs/stats/cpu_stats.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>

namespace clairfs::fs {
namespace {

double Seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

}  // namespace

bool ParseTaskStat(std::string_view line, std::string* name, uint64_t* user_ticks,
                   uint64_t* system_ticks) {
  // "tid (comm) state ppid ...": comm may hold spaces and ')', so it ends at
  // the last ')'; utime and stime are fields 14 and 15, the 12th and 13th
  // after it.
  const size_t open = line.find('(');
  const size_t close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return false;
  }
  *name = std::string(line.substr(open + 1, close - open - 1));
  std::string_view rest = line.substr(close + 1);
  uint64_t values[2];
  for (int field = 0, got = 0; got < 2; ++field) {
    const size_t start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) return false;
    rest.remove_prefix(start);
    const size_t end = std::min(rest.find(' '), rest.size());
    if (field >= 11) {  // 0 is the state (field 3); 11 is utime (field 14)
      auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + end, values[got]);
      if (ec != std::errc() || ptr != rest.data() + end) return false;
      ++got;
    }
    rest.remove_prefix(end);
  }
  *user_ticks = values[0];
  *system_ticks = values[1];
  return true;
}

std::vector<ThreadCpu> ThreadCpuByName() {
  std::map<std::string, ThreadCpu> by_name;
  const double tick = 1.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return {};
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/stat");
    std::string line;
    std::string name;
    uint64_t user = 0, system = 0;
    if (!std::getline(in, line) || !ParseTaskStat(line, &name, &user, &system)) continue;
    ThreadCpu& t = by_name[name];
    t.name = name;
    t.count++;
    t.user_s += static_cast<double>(user) * tick;
    t.system_s += static_cast<double>(system) * tick;
  }
  ::closedir(dir);
  std::vector<ThreadCpu> out;
  out.reserve(by_name.size());
  for (auto& [name, t] : by_name) out.push_back(std::move(t));
  return out;
}

void WriteCpuStats(clairfs::JsonWriter& w) {
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);
  w.Number("user_s", Seconds(self.ru_utime)).Number("system_s", Seconds(self.ru_stime));
  w.BeginArray("threads");
  for (const ThreadCpu& t : ThreadCpuByName()) {
    w.BeginObject()
        .String("name", t.name)
        .Integer("count", t.count)
        .Number("user_s", t.user_s)
        .Number("system_s", t.system_s)
        .EndObject();
  }
  w.EndArray();
}

}  // namespace clairfs::fs
