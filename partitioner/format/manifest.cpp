#include "partitioner/format/manifest.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "partitioner/format/checksum.hpp"
#include "partitioner/format/file_io.hpp"

namespace clairfs::format {
namespace {

constexpr size_t kHeaderChecksummed = offsetof(ManifestHeader, header_checksum);

Status Bad(const std::string& source, const std::string& what) {
  return Status::Corruption(source + ": " + what);
}

bool ValidName(std::string_view n) {
  return !n.empty() && n != "." && n != ".." && n.find('/') == std::string_view::npos &&
         n.find('\0') == std::string_view::npos;
}

}  // namespace

std::string PackFileName(uint32_t p, uint32_t partition_count) {
  if (p == partition_count) return kBroadcastPackName;
  char buf[32];
  std::snprintf(buf, sizeof buf, "part-%05u", p);
  return buf;
}

Status Manifest::ReadFile(const std::string& path, std::vector<char>* bytes, std::string* file) {
  std::error_code ec;
  *file = std::filesystem::is_directory(path, ec) ? path + "/" + kManifestName : path;
  Status st = ReadWholeFile(*file, bytes);
  if (st.IsNotFound()) {
    return Status::NotFound(*file +
                            ": no manifest (not a clairfs-partition output, or the pack "
                            "run did not finish)");
  }
  return st;
}

Result<std::shared_ptr<const Manifest>> Manifest::Load(const std::string& path) {
  std::vector<char> bytes;
  std::string file;
  CLAIRFS_RETURN_IF_ERROR(ReadFile(path, &bytes, &file));
  return Parse(std::move(bytes), file);
}

Result<std::shared_ptr<const Manifest>> Manifest::Parse(std::vector<char> bytes,
                                                        const std::string& source) {
  const size_t n = bytes.size();
  if (n < sizeof(ManifestHeader)) return Bad(source, "too short for a manifest header");
  std::shared_ptr<Manifest> m(new Manifest());
  m->storage_.reset(new uint64_t[(n + 7) / 8]);
  std::memcpy(m->storage_.get(), bytes.data(), n);
  m->size_ = n;
  const char* base = reinterpret_cast<const char*>(m->storage_.get());
  const auto* h = reinterpret_cast<const ManifestHeader*>(base);
  if (std::memcmp(h->magic, kManifestMagic, sizeof h->magic) != 0) {
    return Bad(source, "not a clairfs manifest (bad magic)");
  }
  if (Checksum(base, kHeaderChecksummed) != h->header_checksum) {
    return Bad(source, "manifest header checksum mismatch");
  }
  if (h->version != kFormatVersion) {
    return Status::Unsupported(source + ": format version " + std::to_string(h->version) +
                               ", this build reads version " + std::to_string(kFormatVersion));
  }
  if (h->header_size != sizeof(ManifestHeader)) return Bad(source, "bad header size");
  if (h->node_count == 0) return Bad(source, "no root directory");
  if (h->frame_size == 0) return Bad(source, "frame size is zero");
  // Bounded first, so that a huge string_bytes cannot wrap the size sum below.
  if (h->string_bytes > n) return Bad(source, "string pool larger than the manifest");
  const uint64_t parts = uint64_t{h->partition_count} + 1;
  const uint64_t expect = sizeof(ManifestHeader) + parts * sizeof(PartitionRecord) +
                          uint64_t{h->node_count} * sizeof(NodeRecord) + h->string_bytes;
  if (expect != n) {
    return Bad(source, "size is " + std::to_string(n) + " bytes, the header implies " +
                           std::to_string(expect));
  }
  if (Checksum(base + sizeof(ManifestHeader), n - sizeof(ManifestHeader)) != h->body_checksum) {
    return Bad(source, "manifest body checksum mismatch");
  }
  m->header_ = h;
  m->partitions_ = reinterpret_cast<const PartitionRecord*>(base + sizeof(ManifestHeader));
  m->nodes_ = reinterpret_cast<const NodeRecord*>(m->partitions_ + parts);
  m->strings_ = reinterpret_cast<const char*>(m->nodes_ + h->node_count);

  // Structure: breadth-first order means the children of the directories, taken
  // in node order, are exactly nodes 1, 2, ..., node_count - 1.
  const uint32_t count = h->node_count;
  // Every name is in range before any is read: the sort check below compares
  // the names of children that the main loop has not reached yet.
  for (uint32_t i = 0; i < count; ++i) {
    const NodeRecord& r = m->nodes_[i];
    if (uint64_t{r.name_offset} + r.name_length > h->string_bytes) {
      return Bad(source, "node " + std::to_string(i) + " name out of range");
    }
  }
  uint32_t next_child = 1, files = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const NodeRecord& r = m->nodes_[i];
    // Node i must already be the child of an earlier directory; otherwise a
    // directory could list itself as its own child and make a parent cycle.
    if (i >= next_child && i != 0) return Bad(source, "nodes not reachable from the root");
    std::string_view nm(m->strings_ + r.name_offset, r.name_length);
    if (i == 0 ? (!nm.empty() || r.parent != 0) : !ValidName(nm)) {
      return Bad(source, "node " + std::to_string(i) + " has an invalid name");
    }
    if (i == 0 && r.kind != static_cast<uint8_t>(NodeKind::kDirectory)) {
      return Bad(source, "the root is not a directory");
    }
    const bool dir_mode = (r.mode & 0170000) == 0040000;
    if (dir_mode != (r.kind == static_cast<uint8_t>(NodeKind::kDirectory))) {
      return Bad(source, "node " + std::to_string(i) + " mode does not match its kind");
    }
    if (r.kind == static_cast<uint8_t>(NodeKind::kDirectory)) {
      if (r.offset != next_child || r.stored_size > count - next_child) {
        return Bad(source, "directory node " + std::to_string(i) + " has a bad child range");
      }
      for (uint32_t c = next_child; c < next_child + r.stored_size; ++c) {
        if (m->nodes_[c].parent != i) return Bad(source, "node " + std::to_string(c) + " parent");
        if (c > next_child && !(m->name(c - 1) < m->name(c))) {
          return Bad(source, "children of node " + std::to_string(i) + " not sorted");
        }
      }
      next_child += static_cast<uint32_t>(r.stored_size);
    } else if (r.kind == static_cast<uint8_t>(NodeKind::kFile)) {
      ++files;
      if (r.partition > h->partition_count) {
        return Bad(source, "file node " + std::to_string(i) + " names partition " +
                               std::to_string(r.partition));
      }
      const PartitionRecord& p = m->partitions_[r.partition];
      if (r.offset < sizeof(PackHeader) || r.stored_size > p.pack_bytes ||
          r.offset > p.pack_bytes - r.stored_size) {
        return Bad(source, "file node " + std::to_string(i) + " payload outside its pack");
      }
      // Only files larger than the frame size are framed, so a raw or zstd
      // payload decodes to at most frame_size bytes: what a read of it allocates.
      if (r.codec > static_cast<uint8_t>(Codec::kFramed) ||
          (r.codec == static_cast<uint8_t>(Codec::kRaw) && r.stored_size != r.size) ||
          (r.codec != static_cast<uint8_t>(Codec::kFramed) && r.size > h->frame_size)) {
        return Bad(source, "file node " + std::to_string(i) + " has a bad codec or size");
      }
    } else {
      return Bad(source, "node " + std::to_string(i) + " has an unknown kind");
    }
  }
  if (next_child != count) return Bad(source, "nodes not reachable from the root");
  if (files != h->file_count) return Bad(source, "file count does not match the nodes");
  return std::shared_ptr<const Manifest>(std::move(m));
}

std::optional<uint32_t> Manifest::Lookup(uint32_t dir, std::string_view name) const {
  if (!IsDirectory(dir)) return std::nullopt;
  uint32_t lo = FirstChild(dir), hi = lo + ChildCount(dir);
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    std::string_view m = this->name(mid);
    if (m == name) return mid;
    if (m < name) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return std::nullopt;
}

Result<uint32_t> Manifest::Resolve(std::string_view path) const {
  uint32_t cur = 0;
  size_t pos = 0;
  while (pos < path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(pos, slash - pos);
    pos = slash + 1;
    if (part.empty() || part == ".") continue;
    auto child = Lookup(cur, part);
    if (!child) return Status::NotFound(std::string(path) + ": not in the dataset");
    cur = *child;
  }
  return cur;
}

std::string Manifest::Path(uint32_t i) const {
  std::vector<std::string_view> parts;
  while (i != 0) {
    parts.push_back(name(i));
    i = nodes_[i].parent;
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!out.empty()) out += '/';
    out += *it;
  }
  return out;
}

std::string Manifest::PackName(uint32_t partition) const {
  return PackFileName(partition, header_->partition_count);
}

uint32_t ManifestBuilder::AddNode(const NodeRecord& record, std::string_view name) {
  NodeRecord r = record;
  r.name_offset = static_cast<uint32_t>(strings_.size());
  r.name_length = static_cast<uint16_t>(name.size());
  strings_.append(name);
  nodes_.push_back(r);
  return static_cast<uint32_t>(nodes_.size() - 1);
}

Result<std::vector<char>> ManifestBuilder::Serialize() {
  if (strings_.size() > UINT32_MAX) return Status::Unsupported("names exceed 4 GiB in total");
  ManifestHeader h = header_;
  std::memcpy(h.magic, kManifestMagic, sizeof h.magic);
  h.version = kFormatVersion;
  h.header_size = sizeof(ManifestHeader);
  h.node_count = static_cast<uint32_t>(nodes_.size());
  h.file_count = 0;
  h.raw_bytes = h.stored_bytes = 0;
  for (const NodeRecord& r : nodes_) {
    if (r.kind == static_cast<uint8_t>(NodeKind::kFile)) {
      ++h.file_count;
      h.raw_bytes += r.size;
      h.stored_bytes += r.stored_size;
    }
  }
  h.partition_count = static_cast<uint32_t>(partitions_.size()) - 1;
  h.string_bytes = strings_.size();
  std::vector<char> out(sizeof h);
  auto append = [&out](const void* p, size_t n) {
    out.insert(out.end(), static_cast<const char*>(p), static_cast<const char*>(p) + n);
  };
  append(partitions_.data(), partitions_.size() * sizeof(PartitionRecord));
  append(nodes_.data(), nodes_.size() * sizeof(NodeRecord));
  append(strings_.data(), strings_.size());
  h.body_checksum = Checksum(out.data() + sizeof h, out.size() - sizeof h);
  h.header_checksum = Checksum(&h, kHeaderChecksummed);
  std::memcpy(out.data(), &h, sizeof h);
  auto check = Manifest::Parse(out, "new manifest");
  if (!check.ok()) return Status::InvalidArgument("internal: " + check.status().message());
  return out;
}

}  // namespace clairfs::format
