// Fuzz target: the order reporters' channel (fs/report) - the wire decoder
// and the store behind it, as one connection of the daemon feeds them.
//
// Input: one byte that picks how the stream is cut into reads (0: whole,
// else chunks of 1 to 255 bytes), then the bytes of a connection. They go to
// two stores over one small manifest, once whole and once in chunks.
// Invariants:
//  - both see the same thing: the same Status, the same stats, the same
//    segments (the decoder does not depend on how reads split a stream);
//  - the decoder holds at most one frame, the store at most its memory bound,
//    and once the connection is gone only what is stored is charged;
//  - every segment reported is either there, dropped (NotFound, below the
//    kept ones) or not yet reported (Unavailable, past the count), and its
//    files are files of the manifest (SETTINGS go to a stand-in model).
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "fs/report/reported_orders.hpp"
#include "tests/support/format_fixture.hpp"

namespace {

using namespace clairfs;
using namespace clairfs::fs;

void Require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "report_fuzz: invariant violated: %s\n", what);
  std::abort();
}

std::shared_ptr<const format::Manifest> SmallManifest() {
  namespace ft = format::testing;
  ft::DatasetSpec spec;
  for (const char* path : {"a.jpg", "d/b.jpg", "d/e/c.jpg", "x/1.tfrecord"}) {
    spec.files.push_back({path, ft::TextBytes(16, 7)});
  }
  auto ds = ft::BuildDataset(spec);
  Require(ds.ok(), "the test dataset builds");
  auto m = format::Manifest::Parse(ds->manifest, "fuzz manifest");
  Require(m.ok(), "the test manifest parses");
  return *m;
}

ReportLimits Limits() {
  ReportLimits l;
  l.memory_bytes = 16 << 10;  // small, so refusals are reached
  l.max_frame = 4 << 10;
  l.kept_segments = 4;
  return l;
}

std::string Stats(const ReportedOrders& orders) {
  JsonWriter w;
  w.BeginObject();
  orders.WriteStats(w);
  w.EndObject();
  return w.str();
}

// Every segment of every process, resolved, as text; checks each one.
std::string Segments(const ReportedOrders& orders, const format::Manifest& m) {
  std::string out;
  for (uint64_t pid : orders.Processes()) {
    const uint64_t count = orders.SegmentCount(pid);
    Require(count > 0, "a listed process has no segment");
    Require(orders.Info(pid).has_value(), "a listed process has no HELLO");
    Require(orders.Segment(pid, count).status().IsUnavailable(), "a segment past the count");
    for (uint64_t seq = 0; seq < count; ++seq) {
      auto seg = orders.Segment(pid, seq);
      if (!seg.ok()) {
        Require(seg.status().IsNotFound() && seq + Limits().kept_segments < count,
                "a kept segment is missing");
        continue;
      }
      out += std::to_string(pid) + "/" + std::to_string(seq) + ":";
      for (uint32_t f : seg->files) {
        Require(f < m.node_count() && !m.IsDirectory(f), "a segment's file is not a file");
        out += " " + std::to_string(f);
      }
      out += " u" + std::to_string(seg->unresolved) + "\n";
    }
    // The guess at the next segment, when a model made one: files too.
    auto guess = orders.Guess(pid, count);
    Require(guess.ok() || guess.status().IsUnavailable(), "a guess failed otherwise");
    if (guess.ok()) {
      out += std::to_string(pid) + "/guess:";
      for (uint32_t f : guess->files) {
        Require(f < m.node_count() && !m.IsDirectory(f), "a guessed file is not a file");
        out += " " + std::to_string(f);
      }
      out += "\n";
    }
  }
  return out;
}

// A stand-in for the daemon's sampler models: settings with `n=K` make a
// model whose epoch e is the manifest's files rotated by e, K of them (K
// past the files: the epoch fails); anything else is refused. Never touches
// anything but the manifest.
Result<ReportedModel> Model(const format::Manifest& m,
                            const std::map<std::string, std::string>& settings) {
  auto n = settings.find("n");
  if (n == settings.end() || n->second.empty() || n->second.size() > 3) {
    return Status::InvalidArgument("no n");
  }
  std::vector<uint32_t> files;
  for (uint32_t f = 0; f < m.node_count(); ++f) {
    if (!m.IsDirectory(f)) files.push_back(f);
  }
  const size_t want = static_cast<size_t>(std::atoi(n->second.c_str()));
  ReportedModel model;
  model.window = want + 1;
  model.memory_bytes = want * 100;
  model.files = [files, want](uint64_t epoch) -> Result<std::vector<uint32_t>> {
    if (want > files.size()) return Status::NotFound("too many");
    std::vector<uint32_t> out;
    for (size_t i = 0; i < want; ++i) out.push_back(files[(i + epoch) % files.size()]);
    return out;
  };
  return model;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::shared_ptr<const format::Manifest> manifest = SmallManifest();
  if (size == 0) return 0;
  const size_t chunk = data[0];
  const char* bytes = reinterpret_cast<const char*>(data + 1);
  const size_t n = size - 1;

  ReportedOrders whole(manifest, Limits()), split(manifest, Limits());
  for (ReportedOrders* o : {&whole, &split}) {
    o->SetModelMaker([](const std::map<std::string, std::string>& settings) {
      return Model(*manifest, settings);
    });
  }
  auto a = whole.Connect();
  auto b = split.Connect();
  const Status sa = a->Feed(bytes, n);
  Status sb;
  for (size_t at = 0; at < n && sb.ok(); at += chunk == 0 ? n : chunk) {
    const size_t len = chunk == 0 ? n : std::min(chunk, n - at);
    sb = b->Feed(bytes + at, len);
    Require(b->buffered() <= Limits().max_frame + 4, "the decoder holds more than a frame");
  }
  Require(sa.code() == sb.code() && sa.message() == sb.message(),
          "a split stream decodes differently");
  Require(whole.memory_bytes() <= Limits().memory_bytes, "the store passed its memory bound");
  Require(Segments(whole, *manifest) == Segments(split, *manifest),
          "a split stream stores other segments");
  a->Close(sa);
  a.reset();
  b->Close(sb);
  b.reset();
  // "bytes" differs when the split stream stopped feeding at its error.
  std::string ws = Stats(whole), ss = Stats(split);
  const auto drop_bytes = [](std::string* s) {
    const size_t at = s->find("\"bytes\":");
    s->erase(at, s->find(',', at) - at);
  };
  drop_bytes(&ws);
  drop_bytes(&ss);
  Require(ws == ss, "a split stream counts differently");
  // With the connection gone only what is stored is charged; asking twice
  // gives the same answer (resolution does not change what is stored).
  Require(Segments(whole, *manifest) == Segments(whole, *manifest), "resolution is not stable");
  return 0;
}
