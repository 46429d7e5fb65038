// The ReportedOrders tests' store (reported_orders_test.cpp,
// reported_models_test.cpp): a small manifest, ReportedOrders over it, and
// feeding a connection.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "fs/report/reported_orders.hpp"
#include "tests/fs/report/report_frames.hpp"
#include "tests/support/format_fixture.hpp"

namespace clairfs::fs::testing {

namespace ft = format::testing;

inline std::shared_ptr<const format::Manifest> SmallManifest() {
  ft::DatasetSpec spec;
  for (const char* path : {"train/cat/1.jpg", "train/cat/2.jpg", "train/dog/3.jpg", "val/4.jpg",
                           "etc/passwd", "x/a.tfrecord", "x/b.tfrecord", "x/c.tfrecord"}) {
    spec.files.push_back({path, ft::TextBytes(10, 1)});
  }
  auto ds = ft::BuildDataset(spec);
  REQUIRE(ds.ok());
  auto m = format::Manifest::Parse(ds->manifest, "test manifest");
  REQUIRE(m.ok());
  return *m;
}

struct Store {
  explicit Store(ReportLimits limits = {}) : manifest(SmallManifest()), orders(manifest, limits) {}
  uint32_t Node(const std::string& path) {
    auto n = manifest->Resolve(path);
    REQUIRE(n.ok());
    return *n;
  }
  std::vector<uint32_t> Nodes(const std::vector<std::string>& paths) {
    std::vector<uint32_t> out;
    for (const std::string& p : paths) out.push_back(Node(p));
    return out;
  }
  std::string Stats() const {
    JsonWriter w;
    w.BeginObject();
    orders.WriteStats(w);
    w.EndObject();
    return w.str();
  }
  std::shared_ptr<const format::Manifest> manifest;
  ReportedOrders orders;
};

inline void Send(ReportedOrders::Connection* c, const std::string& bytes) {
  const Status st = c->Feed(bytes.data(), bytes.size());
  INFO(st.ToString());
  REQUIRE(st.ok());
}

inline const std::vector<std::string> kPaths = {"train/cat/1.jpg", "train/cat/2.jpg",
                                                "train/dog/3.jpg", "val/4.jpg"};

}  // namespace clairfs::fs::testing
