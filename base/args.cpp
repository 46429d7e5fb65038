#include "base/args.hpp"

#include <cstdlib>

namespace clairfs::pack {

bool Args::Take(const std::string& name, bool wants_value, std::string* value, size_t* from) {
  for (size_t i = *from; i < args_.size(); ++i) {
    if (used_[i]) continue;
    const std::string& a = args_[i];
    if (a == "--") return false;
    if (wants_value && a.size() > name.size() && a.compare(0, name.size(), name) == 0 &&
        a[name.size()] == '=') {
      used_[i] = true;
      *value = a.substr(name.size() + 1);
      *from = i + 1;
      return true;
    }
    if (a != name) continue;
    used_[i] = true;
    *from = i + 1;
    if (!wants_value) return true;
    if (i + 1 >= args_.size()) {
      if (error_.empty()) error_ = name + " needs a value";
      return false;
    }
    used_[i + 1] = true;
    *value = args_[i + 1];
    *from = i + 2;
    return true;
  }
  return false;
}

bool Args::Flag(const std::string& name) {
  size_t from = 0;
  std::string unused;
  return Take(name, false, &unused, &from);
}

bool Args::Value(const std::string& name, std::string* out) {
  size_t from = 0;
  return Take(name, true, out, &from);
}

bool Args::Value(const std::string& name, uint64_t* out) {
  std::string s;
  if (!Value(name, &s)) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || s[0] == '-') {
    if (error_.empty()) error_ = name + " wants a non-negative integer, got '" + s + "'";
    return false;
  }
  *out = v;
  return true;
}

bool Args::Value(const std::string& name, double* out) {
  std::string s;
  if (!Value(name, &s)) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0') {
    if (error_.empty()) error_ = name + " wants a number, got '" + s + "'";
    return false;
  }
  *out = v;
  return true;
}

bool Args::Repeated(const std::string& name, std::vector<std::string>* out) {
  size_t from = 0;
  std::string v;
  bool any = false;
  while (Take(name, true, &v, &from)) {
    out->push_back(v);
    any = true;
  }
  return any;
}

bool Args::Rest(std::vector<std::string>* out) {
  bool options_done = false;
  for (size_t i = 0; i < args_.size(); ++i) {
    if (used_[i]) continue;
    const std::string& a = args_[i];
    if (!options_done && a == "--") {
      options_done = true;
      continue;
    }
    if (!options_done && a.size() > 1 && a[0] == '-') {
      if (error_.empty()) error_ = "unknown option " + a;
      return false;
    }
    out->push_back(a);
  }
  return true;
}

}  // namespace clairfs::pack
