// A minimal JSON writer: the tools' --json output and the daemon's stats.
// Single-thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clairfs {

// Appends `s` as a JSON string literal. Bytes that are not valid UTF-8 become
// U+FFFD, so the output is always valid JSON.
void AppendJsonString(std::string* out, std::string_view s);

// Builds one JSON value with explicit Begin/End calls; keys and separators are
// handled here, so callers cannot produce malformed output by omission.
class JsonWriter {
 public:
  // 0: compact, on one line. Otherwise for people to read: members of
  // containers nested at most `break_depth` deep start on a line of their
  // own, indented, and the rest is spaced after ':' and ','.
  explicit JsonWriter(int break_depth = 0) : break_depth_(break_depth) {}
  JsonWriter& BeginObject(std::string_view key = {});
  JsonWriter& EndObject();
  JsonWriter& BeginArray(std::string_view key = {});
  JsonWriter& EndArray();
  JsonWriter& String(std::string_view key, std::string_view value);
  JsonWriter& Number(std::string_view key, double value);
  JsonWriter& Integer(std::string_view key, uint64_t value);
  JsonWriter& Bool(std::string_view key, bool value);
  JsonWriter& Null(std::string_view key);
  const std::string& str() const { return out_; }

 private:
  void Key(std::string_view key);
  void Close(char bracket);
  int break_depth_;
  std::string out_;
  std::vector<bool> first_{true};  // per open container: no element written yet
};

}  // namespace clairfs
