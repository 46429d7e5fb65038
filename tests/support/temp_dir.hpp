// A private temporary directory for one test, removed with everything in it
// when the object goes out of scope. Not thread-safe; one per test.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace clairfs::prefetch::testing {

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/clairfs-pf-XXXXXX";
    char* made = mkdtemp(tmpl.data());
    path_ = made != nullptr ? made : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

  // Creates `rel` (and its parents) as an empty file.
  void Touch(const std::string& rel) const {
    std::filesystem::path p = std::filesystem::path(path_) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p).put('x');
  }
  void MakeDir(const std::string& rel) const {
    std::filesystem::create_directories(std::filesystem::path(path_) / rel);
  }
  void Symlink(const std::string& target, const std::string& rel) const {
    std::filesystem::create_symlink(target, std::filesystem::path(path_) / rel);
  }

 private:
  std::string path_;
};

}  // namespace clairfs::prefetch::testing
