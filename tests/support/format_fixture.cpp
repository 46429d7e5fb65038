#include "tests/support/format_fixture.hpp"

#include <stdlib.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>

#include "partitioner/format/checksum.hpp"
#include "partitioner/format/pack_file.hpp"

namespace clairfs::format::testing {

std::vector<char> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<char> out(n);
  for (char& c : out) c = static_cast<char>(rng() & 0xff);
  return out;
}

std::vector<char> TextBytes(size_t n, uint32_t seed) {
  static const char* const kWords[] = {"the",     "partition", "manifest", "frame", "of",
                                       "dataset", "checksum",  "node",     "a",     "zstd",
                                       "replica", "broadcast", "offset",   "pack",  "file"};
  std::mt19937 rng(seed);
  std::vector<char> out;
  out.reserve(n + 16);
  while (out.size() < n) {
    const char* w = kWords[rng() % (sizeof kWords / sizeof kWords[0])];
    out.insert(out.end(), w, w + std::strlen(w));
    out.push_back(rng() % 9 == 0 ? '\n' : ' ');
  }
  out.resize(n);
  return out;
}

std::vector<char> MixedFrames(size_t n, size_t frame, uint32_t seed) {
  std::vector<char> out;
  for (size_t i = 0; out.size() < n; ++i) {
    size_t len = std::min(frame, n - out.size());
    std::vector<char> part = i % 2 == 0 ? TextBytes(len, seed + static_cast<uint32_t>(i))
                                        : RandomBytes(len, seed + static_cast<uint32_t>(i));
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

std::string Mismatch(const std::vector<char>& got, const std::vector<char>& want) {
  if (got == want) return "";
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  return "got " + std::to_string(got.size()) + " bytes, want " + std::to_string(want.size()) +
         ", first difference at byte " + std::to_string(i);
}

namespace {

struct TreeNode {
  const FileSpec* file = nullptr;                         // null for a directory
  std::map<std::string, std::unique_ptr<TreeNode>> kids;  // bytewise order, as the format wants
};

// The node at `path`, created with any missing directories on the way.
TreeNode* Descend(TreeNode* root, const std::string& path) {
  TreeNode* cur = root;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    auto& slot = cur->kids[path.substr(pos, slash - pos)];
    if (!slot) slot = std::make_unique<TreeNode>();
    cur = slot.get();
    if (slash == path.size()) break;
    pos = slash + 1;
  }
  return cur;
}

}  // namespace

Result<Dataset> BuildDataset(const DatasetSpec& spec) {
  Dataset ds;
  TreeNode root;
  for (const FileSpec& f : spec.files) {
    Descend(&root, f.path)->file = &f;
    ds.contents[f.path] = f.data;
  }
  for (const std::string& d : spec.empty_dirs) Descend(&root, d);

  const uint32_t parts = spec.partition_count + 1;
  ds.packs.resize(parts);
  for (uint32_t p = 0; p < parts; ++p) {
    PackHeader ph = MakePackHeader(spec.dataset_id, p);
    ds.packs[p].assign(reinterpret_cast<const char*>(&ph),
                       reinterpret_cast<const char*>(&ph) + sizeof ph);
  }
  std::vector<PartitionRecord> records(parts);

  ManifestBuilder builder;
  PayloadEncoder encoder(spec.encode);
  NodeRecord dir_record{};
  dir_record.kind = static_cast<uint8_t>(NodeKind::kDirectory);
  dir_record.mode = 040755;
  dir_record.mtime_ns = kBaseMtimeNs;
  std::deque<std::pair<const TreeNode*, uint32_t>> queue{{&root, builder.AddNode(dir_record, "")}};
  while (!queue.empty()) {
    auto [dir, index] = queue.front();
    queue.pop_front();
    builder.node(index).offset = builder.node_count();
    builder.node(index).stored_size = dir->kids.size();
    for (const auto& [name, kid] : dir->kids) {
      NodeRecord r = dir_record;
      r.parent = index;
      if (kid->file != nullptr) {
        const FileSpec& f = *kid->file;
        EncodedPayload enc;
        CLAIRFS_RETURN_IF_ERROR(encoder.Encode(f.data.data(), f.data.size(), &enc));
        std::vector<char>& pack = ds.packs.at(f.partition);
        r.kind = static_cast<uint8_t>(NodeKind::kFile);
        r.size = f.data.size();
        r.offset = pack.size();
        const std::vector<char>& payload = enc.codec == Codec::kRaw ? f.data : enc.bytes;
        pack.insert(pack.end(), payload.begin(), payload.end());
        r.stored_size = payload.size();
        r.checksum = enc.checksum;
        r.codec = static_cast<uint8_t>(enc.codec);
        r.partition = f.partition;
        r.flags = f.partition == spec.partition_count ? kNodeFlagBroadcast : 0;
        r.mode = f.mode;
        r.mtime_ns = f.mtime_ns;
        ++records[f.partition].file_count;
        records[f.partition].raw_bytes += f.data.size();
        ds.codecs[f.path] = enc.codec;
      }
      uint32_t child = builder.AddNode(r, name);
      if (kid->file == nullptr) queue.emplace_back(kid.get(), child);
    }
  }
  for (uint32_t p = 0; p < parts; ++p) {
    records[p].pack_bytes = ds.packs[p].size();
    records[p].pack_checksum = Checksum(ds.packs[p].data(), ds.packs[p].size());
  }
  builder.partitions() = records;
  ManifestHeader& h = builder.header();
  h.dataset_id = spec.dataset_id;
  h.replicas = 2;
  h.frame_size = spec.encode.frame_size;
  h.zstd_level = static_cast<uint32_t>(spec.encode.zstd_level);
  h.created_unix = 1'700'000'000;
  ds.header = h;
  auto bytes = builder.Serialize();
  if (!bytes.ok()) return bytes.status();
  ds.manifest = std::move(bytes).value();
  return ds;
}

DatasetSpec SmallMixedSpec() {
  DatasetSpec spec;
  spec.partition_count = 2;
  spec.encode.frame_size = 512;
  spec.files = {
      {"raw.bin", RandomBytes(500, 1), 0},           // under one frame, incompressible: kRaw
      {"docs/text file.txt", TextBytes(500, 2), 0},  // under one frame: kZstd
      {"docs/framed.dat", MixedFrames(2700, 512, 3), 0},
      {"docs/empty", {}, 0},
      {"p1/small", RandomBytes(200, 4), 1},
      {"bcast.txt", TextBytes(300, 5), 2},
  };
  return spec;
}

void WriteDataset(const Dataset& dataset, const std::string& dir) {
  auto write = [&dir](const std::string& name, const std::vector<char>& bytes) {
    std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + dir + "/" + name);
  };
  write(kManifestName, dataset.manifest);
  const uint32_t p_count = static_cast<uint32_t>(dataset.packs.size()) - 1;
  for (uint32_t p = 0; p <= p_count; ++p) write(PackFileName(p, p_count), dataset.packs[p]);
}

size_t NodeOffset(const std::vector<char>& manifest, uint32_t i) {
  ManifestHeader h;
  std::memcpy(&h, manifest.data(), sizeof h);
  return sizeof h + (uint64_t{h.partition_count} + 1) * sizeof(PartitionRecord) +
         uint64_t{i} * sizeof(NodeRecord);
}

size_t StringsOffset(const std::vector<char>& manifest) {
  ManifestHeader h;
  std::memcpy(&h, manifest.data(), sizeof h);
  return NodeOffset(manifest, h.node_count);
}

void Reseal(std::vector<char>* manifest) {
  EditHeader(manifest, [manifest](ManifestHeader& h) {
    h.body_checksum = Checksum(manifest->data() + sizeof h, manifest->size() - sizeof h);
    h.header_checksum = Checksum(&h, offsetof(ManifestHeader, header_checksum));
  });
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/clairfs-format-test-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp " + tmpl);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace clairfs::format::testing
