// Helpers of the write area's tests: options under a temporary directory, and
// a tree (path -> bytes, or "<dir>") read from a directory or through an area.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "fs/vfs/write_area.hpp"

namespace clairfs::fs {

inline constexpr uint64_t kFirstIno = 1000;

inline WriteAreaOptions Options(const std::string& base, std::chrono::milliseconds settle) {
  WriteAreaOptions o;
  o.name = "out";
  o.local = base + "/local";
  o.persist = base + "/persist";
  o.settle = settle;
  o.uid = ::getuid();
  o.gid = ::getgid();
  return o;
}

// The tree under a directory: path -> file bytes, or "<dir>" for a directory.
using Tree = std::map<std::string, std::string>;

inline Tree DiskTree(const std::string& root) {
  Tree t;
  for (auto it = std::filesystem::recursive_directory_iterator(root);
       it != std::filesystem::end(it); ++it) {
    const std::string rel = std::filesystem::relative(it->path(), root).string();
    if (rel.rfind(".clairfs-drain.", 0) == 0 || rel.find("/.clairfs-drain.") != std::string::npos) {
      continue;
    }
    if (it->is_directory()) {
      t[rel] = "<dir>";
    } else {
      std::ifstream in(it->path(), std::ios::binary);
      t[rel] = std::string(std::istreambuf_iterator<char>(in), {});
    }
  }
  return t;
}

// The area's tree, through its calls only.
inline void AreaTree(WriteArea& a, uint64_t dir, const std::string& rel, Tree* t) {
  std::vector<std::pair<std::string, Attr>> entries;
  REQUIRE(a.ReadDir(dir, 0, false, [&](std::string_view name, const Attr& attr, uint64_t) {
             entries.emplace_back(std::string(name), attr);
             return true;
           }).ok());
  for (const auto& [name, attr] : entries) {
    if (name == "." || name == "..") continue;
    const std::string path = rel.empty() ? name : rel + "/" + name;
    if (S_ISDIR(attr.mode)) {
      (*t)[path] = "<dir>";
      AreaTree(a, attr.ino, path, t);
    } else {
      auto bytes = a.Read(attr.ino, 0, attr.size + 10);
      REQUIRE(bytes.ok());
      CHECK(bytes->size() == attr.size);
      (*t)[path] = *bytes;
    }
  }
}

inline Tree AreaTree(WriteArea& a) {
  Tree t;
  AreaTree(a, a.root_ino(), "", &t);
  return t;
}

// Resolves "a/b/c" in the area; 0 when missing.
inline uint64_t Resolve(WriteArea& a, const std::string& rel) {
  uint64_t ino = a.root_ino();
  size_t pos = 0;
  while (pos < rel.size()) {
    size_t slash = rel.find('/', pos);
    if (slash == std::string::npos) slash = rel.size();
    auto r = a.Lookup(ino, rel.substr(pos, slash - pos));
    if (!r.ok()) return 0;
    ino = r->ino;
    pos = slash + 1;
  }
  return ino;
}

inline std::pair<std::string, std::string> Split(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  if (slash == std::string::npos) return {"", rel};
  return {rel.substr(0, slash), rel.substr(slash + 1)};
}

}  // namespace clairfs::fs
