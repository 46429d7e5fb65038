// Frames of the order reporters' wire protocol (docs/report.md), written the
// way a reporter writes them: for the report tests, the fuzz target and its
// seeds. Header-only; pure functions.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace clairfs::fs::testing {

template <typename T>
void PutLE(std::string* s, T v) {
  char b[sizeof v];
  std::memcpy(b, &v, sizeof v);  // the hosts we run on are little-endian, as the wire is
  s->append(b, sizeof v);
}

inline std::string Frame(uint8_t type, const std::string& body) {
  std::string out;
  PutLE<uint32_t>(&out, static_cast<uint32_t>(body.size() + 1));
  out.push_back(static_cast<char>(type));
  return out + body;
}

inline std::string HelloFrame(const std::string& lines) { return Frame(1, lines); }

inline std::string MainHello(int64_t pid, int64_t rank = 0) {
  return HelloFrame("version=1\nrole=main\npid=" + std::to_string(pid) +
                    "\nrank=" + std::to_string(rank) +
                    "\nworld_size=4\nlocal_rank=1\nlocal_size=2\nframework=torch\n");
}

inline std::string WorkerHello(int64_t pid) {
  return HelloFrame("version=1\nrole=worker\npid=" + std::to_string(pid) + "\n");
}

inline std::string PathsBody(const std::vector<std::string>& paths) {
  std::string out;
  for (const std::string& p : paths) out += p + '\0';
  return out;
}

inline std::string TablePathsFrame(uint64_t table, uint32_t first,
                                   const std::vector<std::string>& paths) {
  std::string body;
  PutLE(&body, table);
  PutLE(&body, first);
  return Frame(2, body + PathsBody(paths));
}

using FileRecords = std::vector<std::pair<uint32_t, std::vector<std::string>>>;

inline std::string TableFilesFrame(uint64_t table, const FileRecords& records) {
  std::string body;
  PutLE(&body, table);
  for (const auto& [index, paths] : records) {
    PutLE(&body, index);
    PutLE(&body, static_cast<uint32_t>(paths.size()));
    body += PathsBody(paths);
  }
  return Frame(3, body);
}

inline std::string AliasFrame(uint64_t alias, uint64_t table) {
  std::string body;
  PutLE(&body, alias);
  PutLE(&body, table);
  return Frame(4, body);
}

// ORDER (type 5), or GUESS (type 9: the same layout).
inline std::string OrderFrame(uint64_t table, uint64_t stream, uint64_t epoch, bool last,
                              const std::vector<uint32_t>& indices, uint8_t type = 5) {
  std::string body;
  PutLE(&body, table);
  PutLE(&body, stream);
  PutLE(&body, epoch);
  body.push_back(last ? 1 : 0);
  for (uint32_t i : indices) PutLE(&body, i);
  return Frame(type, body);
}

inline std::string GuessFrame(uint64_t table, uint64_t stream, uint64_t epoch, bool last,
                              const std::vector<uint32_t>& indices) {
  return OrderFrame(table, stream, epoch, last, indices, 9);
}

inline std::string LoaderFrame(uint64_t stream, const std::string& lines) {
  std::string body;
  PutLE(&body, stream);
  return Frame(6, body + lines);
}

inline std::string SettingsFrame(uint64_t stream, const std::string& lines) {
  std::string body;
  PutLE(&body, stream);
  return Frame(7, body + lines);
}

inline std::string EpochFrame(uint64_t stream, uint64_t epoch) {
  std::string body;
  PutLE(&body, stream);
  PutLE(&body, epoch);
  return Frame(8, body);
}

}  // namespace clairfs::fs::testing
