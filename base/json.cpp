#include "base/json.hpp"

#include <cmath>
#include <cstdio>

namespace clairfs {

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xe  ? 3
                 : (c >> 3) == 0x1e ? 4
                                    : 0;
    for (size_t k = 1; len && k < len; ++k) {
      if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) len = 0;
    }
    if (len == 0) {
      *out += "\xef\xbf\xbd";  // U+FFFD
      ++i;
      continue;
    }
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      *out += buf;
    } else {
      out->append(s.substr(i, len));
    }
    i += len;
  }
  out->push_back('"');
}

void JsonWriter::Key(std::string_view key) {
  if (!first_.back()) out_ += ',';
  first_.back() = false;
  // first_ holds one entry per open container plus the outermost level.
  const size_t depth = first_.size() - 1;
  if (depth > 0 && depth <= static_cast<size_t>(break_depth_)) {
    out_ += '\n';
    out_.append(2 * depth, ' ');
  } else if (break_depth_ > 0 && out_.back() == ',') {
    out_ += ' ';
  }
  if (!key.empty()) {
    AppendJsonString(&out_, key);
    out_ += break_depth_ > 0 ? ": " : ":";
  }
}

void JsonWriter::Close(char bracket) {
  const bool empty = first_.back();
  first_.pop_back();
  const size_t depth = first_.size() - 1;
  if (!empty && depth < static_cast<size_t>(break_depth_)) {
    out_ += '\n';
    out_.append(2 * depth, ' ');
  }
  out_ += bracket;
}

JsonWriter& JsonWriter::BeginObject(std::string_view key) {
  Key(key);
  out_ += '{';
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  Close('}');
  return *this;
}

JsonWriter& JsonWriter::BeginArray(std::string_view key) {
  Key(key);
  out_ += '[';
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  Close(']');
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view key, std::string_view value) {
  Key(key);
  AppendJsonString(&out_, value);
  return *this;
}

JsonWriter& JsonWriter::Number(std::string_view key, double value) {
  Key(key);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", std::isfinite(value) ? value : 0.0);
  out_ += buf;
  return *this;
}

JsonWriter& JsonWriter::Integer(std::string_view key, uint64_t value) {
  Key(key);
  out_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::Bool(std::string_view key, bool value) {
  Key(key);
  out_ += value ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Null(std::string_view key) {
  Key(key);
  out_ += "null";
  return *this;
}

}  // namespace clairfs
