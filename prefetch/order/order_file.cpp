#include "prefetch/order/order_file.hpp"

#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>

namespace clairfs::prefetch {

namespace {

bool ParseU64(std::string_view s, uint64_t& out) {
  if (s.empty() || s.front() == '+' || s.front() == '-') return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t pos = 0;
  while (pos < line.size()) {
    size_t start = line.find_first_not_of(" \t", pos);
    if (start == std::string_view::npos) break;
    size_t end = line.find_first_of(" \t", start);
    if (end == std::string_view::npos) end = line.size();
    words.push_back(line.substr(start, end - start));
    pos = end;
  }
  return words;
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  Result<OrderFile> Run() {
    std::string_view line;
    if (!NextLine(line) || StripCr(line) != kOrderFileMagic) {
      return Error("the first line must be '" + std::string(kOrderFileMagic) + "'");
    }
    while (NextLine(line)) {
      if (line.empty()) continue;
      if (line.front() == '#') {
        CLAIRFS_RETURN_IF_ERROR(Directive(StripCr(line)));
        continue;
      }
      if (current_ == nullptr) return Error("entry before the first '# epoch E rank R' line");
      if (order_.entries == OrderFile::Entries::kPaths) {
        current_->paths.emplace_back(line);
      } else {
        uint64_t index;
        if (!ParseU64(StripCr(line), index)) {
          return Error("'" + std::string(line) + "' is not a dataset index");
        }
        current_->indices.push_back(index);
      }
    }
    return std::move(order_);
  }

 private:
  // Directive lines tolerate a trailing CR; entry lines are taken as they are.
  static std::string_view StripCr(std::string_view s) {
    return !s.empty() && s.back() == '\r' ? s.substr(0, s.size() - 1) : s;
  }

  bool NextLine(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) end = text_.size();
    line = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    ++line_no_;
    return true;
  }

  Status Error(const std::string& why) const {
    return Status::Corruption(name_ + ":" + std::to_string(line_no_) + ": " + why);
  }

  Status Directive(std::string_view line) {
    std::vector<std::string_view> w = Words(line.substr(1));
    if (w.empty()) return Status::Ok();  // a bare '#' is a comment
    if (w[0] == "epoch") {
      uint64_t epoch, rank;
      if (w.size() != 4 || w[2] != "rank" || !ParseU64(w[1], epoch) || !ParseU64(w[3], rank)) {
        return Error("expected '# epoch E rank R' with non-negative integers");
      }
      if (order_.world_size && rank >= *order_.world_size) {
        return Error("rank " + std::to_string(rank) + " is not below world-size " +
                     std::to_string(*order_.world_size));
      }
      auto [it, inserted] = order_.sections.try_emplace({epoch, rank});
      if (!inserted) {
        return Error("a second section for epoch " + std::to_string(epoch) + " rank " +
                     std::to_string(rank));
      }
      current_ = &it->second;
      return Status::Ok();
    }
    bool in_header = order_.sections.empty();
    if (w[0] == "entries") {
      if (!in_header) return Error("'# entries' must come before the first section");
      if (w.size() == 2 && w[1] == "paths") {
        order_.entries = OrderFile::Entries::kPaths;
      } else if (w.size() == 2 && w[1] == "indices") {
        order_.entries = OrderFile::Entries::kIndices;
      } else {
        return Error("expected '# entries paths' or '# entries indices'");
      }
      return Status::Ok();
    }
    if (w[0] == "world-size") {
      uint64_t ws;
      if (!in_header) return Error("'# world-size' must come before the first section");
      if (w.size() != 2 || !ParseU64(w[1], ws) || ws == 0) {
        return Error("expected '# world-size N' with N >= 1");
      }
      order_.world_size = ws;
      return Status::Ok();
    }
    if (w[0] == "layout") {
      if (!in_header) return Error("'# layout' must come before the first section");
      if (w.size() != 2 || (w[1] != "image-folder" && w[1] != "list")) {
        return Error("expected '# layout image-folder' or '# layout list'");
      }
      order_.layout = std::string(w[1]);
      return Status::Ok();
    }
    if (w[0] == "clairfs-order") return Error("repeated or unsupported format line");
    return Status::Ok();  // any other '#' line is a comment
  }

  std::string_view text_;
  const std::string& name_;
  size_t pos_ = 0;
  size_t line_no_ = 0;
  OrderFile order_;
  OrderFile::Section* current_ = nullptr;
};

}  // namespace

uint64_t OrderFile::EffectiveWorldSize() const {
  if (world_size) return *world_size;
  uint64_t ws = 0;
  for (const auto& [key, section] : sections) ws = std::max(ws, key.second + 1);
  return ws;
}

std::vector<uint64_t> OrderFile::EpochsOf(uint64_t rank) const {
  std::vector<uint64_t> epochs;
  for (const auto& [key, section] : sections) {
    if (key.second == rank) epochs.push_back(key.first);
  }
  return epochs;  // std::map orders by epoch first
}

Result<OrderFile> ParseOrderFile(std::string_view text, const std::string& name) {
  return Parser(text, name).Run();
}

Result<OrderFile> ReadOrderFile(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::FromErrno(errno, "cannot open order file " + file);
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Status::IOError("cannot read order file " + file);
  return ParseOrderFile(buf.str(), file);
}

Result<std::string> FormatOrderFile(const OrderFile& order) {
  std::string out(kOrderFileMagic);
  out += '\n';
  bool paths = order.entries == OrderFile::Entries::kPaths;
  out += paths ? "# entries paths\n" : "# entries indices\n";
  if (order.world_size) out += "# world-size " + std::to_string(*order.world_size) + "\n";
  if (!order.layout.empty()) {
    if (order.layout != "image-folder" && order.layout != "list") {
      return Status::InvalidArgument("order file: layout '" + order.layout +
                                     "' is not image-folder or list");
    }
    out += "# layout " + order.layout + "\n";
  }
  for (const auto& [key, section] : order.sections) {
    std::string where =
        "epoch " + std::to_string(key.first) + " rank " + std::to_string(key.second);
    if (order.world_size && key.second >= *order.world_size) {
      return Status::InvalidArgument("order file: " + where + " is outside world-size " +
                                     std::to_string(*order.world_size));
    }
    out += "# " + where + "\n";
    if (!paths) {
      for (Index i : section.indices) out += std::to_string(i) + "\n";
      continue;
    }
    for (const std::string& p : section.paths) {
      if (p.empty() || p.front() == '#' || p.find('\n') != std::string::npos) {
        return Status::InvalidArgument("order file: " + where + ": path '" + p +
                                       "' cannot be written (empty, starts with '#' or holds a "
                                       "newline)");
      }
      out += p;
      out += '\n';
    }
  }
  return out;
}

Status WriteOrderFile(const std::string& file, const OrderFile& order) {
  Result<std::string> text = FormatOrderFile(order);
  if (!text.ok()) return text.status();
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) return Status::FromErrno(errno, "cannot create order file " + file);
  out << text.value();
  out.flush();
  if (!out) return Status::IOError("cannot write order file " + file);
  return Status::Ok();
}

}  // namespace clairfs::prefetch
