#include "fs/report/report_decoder.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <functional>

namespace clairfs::fs {
namespace {

static_assert(std::endian::native == std::endian::little, "the wire is little-endian");

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// After `count` NUL-terminated paths starting at p (validated beforehand).
const char* SkipPaths(const char* p, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) p += std::strlen(p) + 1;
  return p;
}

std::string SizeText(uint64_t bytes) {
  if (bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

// Counts the NUL-terminated paths of body[0, size); false if the last lacks its NUL.
bool CountPaths(const char* body, size_t size, size_t* count) {
  *count = 0;
  const char* p = body;
  const char* end = body + size;
  while (p < end) {
    const void* nul = std::memchr(p, '\0', static_cast<size_t>(end - p));
    if (nul == nullptr) return false;
    p = static_cast<const char*>(nul) + 1;
    ++*count;
  }
  return true;
}

}  // namespace

std::string ReportFrameName(uint8_t type) {
  switch (static_cast<ReportFrame>(type)) {
    case ReportFrame::kHello:
      return "HELLO";
    case ReportFrame::kTablePaths:
      return "TABLE_PATHS";
    case ReportFrame::kTableFiles:
      return "TABLE_FILES";
    case ReportFrame::kAlias:
      return "ALIAS";
    case ReportFrame::kOrder:
      return "ORDER";
    case ReportFrame::kLoader:
      return "LOADER";
    case ReportFrame::kSettings:
      return "SETTINGS";
    case ReportFrame::kEpoch:
      return "EPOCH";
    case ReportFrame::kGuess:
      return "GUESS";
  }
  return "frame type " + std::to_string(type);
}

uint32_t U32List::operator[](size_t i) const { return Load<uint32_t>(bytes_.data() + 4 * i); }

std::vector<uint32_t> U32List::ToVector() const {
  std::vector<uint32_t> out(size());
  if (!out.empty()) std::memcpy(out.data(), bytes_.data(), out.size() * 4);
  return out;
}

ReportFileRecord FileRecordList::Iterator::operator*() const {
  const uint32_t count = Load<uint32_t>(p_ + 4);
  const char* paths = p_ + 8;
  const char* end = SkipPaths(paths, count);
  return {Load<uint32_t>(p_), PathList(std::string_view(paths, end - paths), count)};
}

FileRecordList::Iterator& FileRecordList::Iterator::operator++() {
  p_ = SkipPaths(p_ + 8, Load<uint32_t>(p_ + 4));
  return *this;
}

Status ReportDecoder::Fail(Status st) {
  error_ = std::move(st);
  have_header_ = 0;
  frame_ = std::vector<char>();
  return error_;
}

Status ReportDecoder::Feed(const char* data, size_t size, ReportSink* sink) {
  if (!error_.ok()) return error_;
  while (size > 0) {
    if (have_header_ < sizeof header_) {
      const size_t n = std::min(sizeof header_ - have_header_, size);
      std::memcpy(header_ + have_header_, data, n);
      have_header_ += n;
      data += n;
      size -= n;
      if (have_header_ < sizeof header_) break;
      length_ = Load<uint32_t>(header_);
      const std::string at = "frame " + std::to_string(frames_ + 1) + ": ";
      if (length_ == 0) return Fail(Status::Corruption(at + "empty payload (no frame type)"));
      if (length_ > max_frame_) {
        return Fail(Status::Corruption(at + "payload of " + std::to_string(length_) +
                                       " bytes exceeds " + SizeText(max_frame_)));
      }
      frame_.clear();
      if (size == 0) break;
    }
    const size_t n = std::min<size_t>(length_ - frame_.size(), size);
    if (frame_.size() + n > frame_.capacity()) {
      // Grow with what arrives, never past the frame: a sender that announces
      // 16 MiB and trickles costs what it sent.
      const size_t want = std::max({frame_.capacity() * 2, frame_.size() + n, size_t{4096}});
      frame_.reserve(std::min<size_t>(want, length_));
    }
    frame_.insert(frame_.end(), data, data + n);
    data += n;
    size -= n;
    if (frame_.size() < length_) break;
    Status st = Frame(sink);
    if (!st.ok()) return Fail(std::move(st));
    ++frames_;
    have_header_ = 0;
    frame_.clear();
    if (frame_.capacity() > (1u << 20))
      frame_ = std::vector<char>();  // an idle connection keeps little
  }
  return Status::Ok();
}

Status ReportDecoder::Frame(ReportSink* sink) {
  const std::string at = "frame " + std::to_string(frames_ + 1) + ": ";
  const uint8_t type = static_cast<uint8_t>(frame_[0]);
  const char* body = frame_.data() + 1;
  const size_t size = frame_.size() - 1;
  const std::string name = ReportFrameName(type);
  const auto bad = [&](const std::string& why) { return Status::Corruption(at + why); };
  const auto truncated = [&] { return bad(name + " body truncated"); };
  if (type < 1 || type > 9) return bad("unknown frame type " + std::to_string(type));
  if ((type == 1) == saw_hello_) return bad("HELLO must be the first frame");

  // Text lines key=value (HELLO, LOADER, SETTINGS): `number` names the
  // integer keys, `other` takes the others (HELLO and LOADER ignore unknown
  // keys).
  const auto parse_lines =
      [&](std::string_view text, const std::function<int64_t*(std::string_view)>& number,
          const std::function<void(std::string_view, std::string_view)>& other) -> Status {
    while (!text.empty()) {
      const size_t eol = text.find('\n');
      std::string_view line = text.substr(0, eol);
      text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
      if (line.empty()) continue;
      const size_t eq = line.find('=');
      if (eq == std::string_view::npos) return bad(name + " line without '='");
      const std::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
      if (int64_t* n = number(key); n != nullptr) {
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), *n);
        if (ec != std::errc() || end != value.data() + value.size() || value.empty()) {
          return bad(name + " " + std::string(key) + " is not a number");
        }
      } else {
        other(key, value);
      }
    }
    return Status::Ok();
  };

  Status st;
  switch (static_cast<ReportFrame>(type)) {
    case ReportFrame::kHello: {
      ReportHello m;
      CLAIRFS_RETURN_IF_ERROR(parse_lines(
          std::string_view(body, size),
          [&m](std::string_view key) -> int64_t* {
            return key == "version"      ? &m.version
                   : key == "pid"        ? &m.pid
                   : key == "rank"       ? &m.rank
                   : key == "world_size" ? &m.world_size
                   : key == "local_rank" ? &m.local_rank
                   : key == "local_size" ? &m.local_size
                                         : nullptr;
          },
          [&m](std::string_view key, std::string_view value) {
            if (key == "role") m.role = value;
            if (key == "framework") m.framework = value;
          }));
      if (m.version == -1) return bad("HELLO without version");
      if (m.version != kReportVersion) {
        return bad("unsupported version " + std::to_string(m.version));
      }
      saw_hello_ = true;
      st = sink->OnHello(m);
      break;
    }
    case ReportFrame::kTablePaths: {
      if (size < 12) return truncated();
      size_t count;
      if (!CountPaths(body + 12, size - 12, &count)) return truncated();
      ReportTablePaths m{Load<uint64_t>(body), Load<uint32_t>(body + 8),
                         PathList(std::string_view(body + 12, size - 12), count)};
      if (uint64_t{m.first} + count > uint64_t{UINT32_MAX} + 1) {
        return bad("TABLE_PATHS entries past index 2^32");
      }
      st = sink->OnTablePaths(m);
      break;
    }
    case ReportFrame::kTableFiles: {
      if (size < 8) return truncated();
      const char* p = body + 8;
      const char* end = body + size;
      size_t records = 0;
      while (p < end) {
        if (end - p < 8) return truncated();
        const uint32_t index = Load<uint32_t>(p);
        const uint32_t count = Load<uint32_t>(p + 4);
        p += 8;
        for (uint32_t i = 0; i < count; ++i) {  // each path takes a byte at least
          const void* nul = p < end ? std::memchr(p, '\0', static_cast<size_t>(end - p)) : nullptr;
          if (nul == nullptr) {
            return bad("TABLE_FILES record of index " + std::to_string(index) + ": count " +
                       std::to_string(count) + " runs past the body");
          }
          p = static_cast<const char*>(nul) + 1;
        }
        ++records;
      }
      ReportTableFiles m{Load<uint64_t>(body),
                         FileRecordList(std::string_view(body + 8, size - 8), records)};
      st = sink->OnTableFiles(m);
      break;
    }
    case ReportFrame::kAlias: {
      if (size < 16) return truncated();
      if (size > 16) return bad("ALIAS body has " + std::to_string(size - 16) + " extra bytes");
      st = sink->OnAlias(ReportAlias{Load<uint64_t>(body), Load<uint64_t>(body + 8)});
      break;
    }
    case ReportFrame::kOrder:
    case ReportFrame::kGuess: {
      if (size < 25 || (size - 25) % 4 != 0) return truncated();
      const uint8_t last = static_cast<uint8_t>(body[24]);
      if (last > 1) return bad(name + " last is " + std::to_string(last) + ", not 0 or 1");
      ReportOrder m{Load<uint64_t>(body),
                    Load<uint64_t>(body + 8),
                    Load<uint64_t>(body + 16),
                    last == 1,
                    U32List(std::string_view(body + 25, size - 25)),
                    static_cast<ReportFrame>(type) == ReportFrame::kGuess};
      st = sink->OnOrder(m);
      break;
    }
    case ReportFrame::kLoader: {
      if (size < 8) return truncated();
      ReportLoader m;
      m.stream = Load<uint64_t>(body);
      CLAIRFS_RETURN_IF_ERROR(parse_lines(
          std::string_view(body + 8, size - 8),
          [&m](std::string_view key) -> int64_t* {
            return key == "batch_size"        ? &m.batch_size
                   : key == "num_workers"     ? &m.num_workers
                   : key == "prefetch_factor" ? &m.prefetch_factor
                                              : nullptr;
          },
          [](std::string_view, std::string_view) {}));
      st = sink->OnLoader(m);
      break;
    }
    case ReportFrame::kSettings: {
      if (size < 8) return truncated();
      ReportSettings m;
      m.stream = Load<uint64_t>(body);
      Status dup;
      CLAIRFS_RETURN_IF_ERROR(parse_lines(
          std::string_view(body + 8, size - 8), [](std::string_view) { return nullptr; },
          [&](std::string_view key, std::string_view value) {
            if (m.values.size() == kMaxSettings && dup.ok()) {
              dup = bad("SETTINGS has more than " + std::to_string(kMaxSettings) + " keys");
            }
            for (const auto& kv : m.values) {
              if (kv.first == key && dup.ok()) {
                dup = bad("SETTINGS key " + std::string(key) + " given twice");
              }
            }
            m.values.emplace_back(key, value);
          }));
      CLAIRFS_RETURN_IF_ERROR(dup);
      st = sink->OnSettings(m);
      break;
    }
    case ReportFrame::kEpoch: {
      if (size < 16) return truncated();
      if (size > 16) return bad("EPOCH body has " + std::to_string(size - 16) + " extra bytes");
      st = sink->OnEpoch(ReportEpoch{Load<uint64_t>(body), Load<uint64_t>(body + 8)});
      break;
    }
  }
  return st.ok() ? st : st.WithPrefix(at);
}

}  // namespace clairfs::fs
