// A small command-line parser for the tools: `--name value`, `--name=value`,
// flags, repeated options and positionals. Options are claimed by name; what
// is left over must be exactly the expected positionals. The first problem is
// kept in error(). Single-thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace clairfs::pack {

class Args {
 public:
  Args(int argc, char** argv) : args_(argv, argv + argc), used_(args_.size()) {}

  // Each returns whether the option was present.
  bool Flag(const std::string& name);
  bool Value(const std::string& name, std::string* out);
  bool Value(const std::string& name, uint64_t* out);
  bool Value(const std::string& name, double* out);
  bool Repeated(const std::string& name, std::vector<std::string>* out);
  // Takes the unclaimed arguments as exactly `n` positionals; false (and
  // error() set) on an unknown option or the wrong count.
  template <typename... S>
  bool Positionals(size_t n, S*... outs) {
    std::vector<std::string> rest;
    if (!Rest(&rest)) return false;
    if (rest.size() != n) {
      error_ = "expected " + std::to_string(n) + " arguments, got " + std::to_string(rest.size());
      return false;
    }
    size_t i = 0;
    ((*outs = rest[i++]), ...);
    return true;
  }
  // Takes every unclaimed argument as a positional (any number); false on an
  // unknown option.
  bool Rest(std::vector<std::string>* out);
  const std::string& error() const { return error_; }

 private:
  // Finds the next unclaimed occurrence of `name` at or after `from`; sets
  // *value for options that take one.
  bool Take(const std::string& name, bool wants_value, std::string* value, size_t* from);
  std::vector<std::string> args_;
  std::vector<bool> used_;
  std::string error_;
};

}  // namespace clairfs::pack
