// report_fuzz's seeds: streams of one order reporter's connection over its
// manifest (a.jpg, d/b.jpg, d/e/c.jpg, x/1.tfrecord), each behind the byte
// that chunks its reads. Written by fuzz_seeds. Header-only; pure.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tests/fs/report/report_frames.hpp"

namespace clairfs::fuzz {

// (file name, input) pairs.
inline std::vector<std::pair<std::string, std::string>> ReportSeeds() {
  using namespace clairfs::fs::testing;
  const std::string main_session =
      MainHello(4242) + TablePathsFrame(7, 0, {"a.jpg", "d/b.jpg"}) +
      TablePathsFrame(7, 2, {"d/e/c.jpg", "../a.jpg", "/a.jpg", "d"}) + AliasFrame(99, 7) +
      TableFilesFrame(99, {{1, {"x/1.tfrecord", "a.jpg"}}, {2, {}}}) +
      OrderFrame(7, 1, 0, false, {3, 0, 1}) + OrderFrame(7, 1, 0, true, {2, 5, 9}) +
      OrderFrame(7, 2, 0, true, {0}) + OrderFrame(7, 1, 1, true, {1, 1});
  const std::string worker_session =
      WorkerHello(4243) + TableFilesFrame(99, {{0, {"a.jpg"}}, {4, {"d/b.jpg", "d/e/c.jpg"}}});
  const std::string broken =
      MainHello(1) + TablePathsFrame(3, 0, {"a.jpg"}) + TablePathsFrame(3, 5, {"d/b.jpg"});
  const std::string settings_session = MainHello(77) + SettingsFrame(3, "sampler=keras\nn=2\n") +
                                       EpochFrame(3, 0) + EpochFrame(3, 1) +
                                       SettingsFrame(4, "n=9\n") + EpochFrame(4, 0) +
                                       SettingsFrame(5, "x=1\n") + EpochFrame(5, 0);
  const auto with = [](uint8_t chunk, const std::string& stream) {
    return std::string(1, static_cast<char>(chunk)) + stream;
  };
  return {{"main-whole", with(0, main_session)},
          {"main-chunks-7", with(7, main_session)},
          {"worker-chunks-1", with(1, worker_session)},
          {"broken-follow-on", with(3, broken)},
          {"settings-chunks-5", with(5, settings_session)}};
}

}  // namespace clairfs::fuzz
