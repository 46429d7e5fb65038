#include "fs/dist/path_template.hpp"

#include <cctype>
#include <cstdlib>

namespace clairfs::fs {
namespace {

bool NameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

Result<std::string> ExpandPath(const std::string& pattern, int rank, const std::string& host) {
  std::string out;
  for (size_t i = 0; i < pattern.size();) {
    if (pattern.compare(i, 6, "{rank}") == 0) {
      out += std::to_string(rank);
      i += 6;
    } else if (pattern.compare(i, 6, "{host}") == 0) {
      out += host;
      i += 6;
    } else if (pattern[i] == '$' && i + 1 < pattern.size() && pattern[i + 1] == '{') {
      const size_t close = pattern.find('}', i + 2);
      if (close == std::string::npos) {
        return Status::InvalidArgument("unterminated ${ in '" + pattern + "'");
      }
      std::string body = pattern.substr(i + 2, close - i - 2);
      std::string def;
      bool has_def = false;
      if (size_t d = body.find(":-"); d != std::string::npos) {
        def = body.substr(d + 2);
        body.resize(d);
        has_def = true;
      }
      const char* v = std::getenv(body.c_str());
      if (v != nullptr && *v != '\0') {
        out += v;
      } else if (has_def) {
        out += def;
      } else {
        return Status::InvalidArgument("'" + pattern + "' uses ${" + body + "}, which is not set");
      }
      i = close + 1;
    } else if (pattern[i] == '$' && i + 1 < pattern.size() && NameChar(pattern[i + 1])) {
      size_t j = i + 1;
      while (j < pattern.size() && NameChar(pattern[j])) ++j;
      const std::string name = pattern.substr(i + 1, j - i - 1);
      const char* v = std::getenv(name.c_str());
      if (v == nullptr) {
        return Status::InvalidArgument("'" + pattern + "' uses $" + name + ", which is not set");
      }
      out += v;
      i = j;
    } else {
      out += pattern[i++];
    }
  }
  return out;
}

}  // namespace clairfs::fs
