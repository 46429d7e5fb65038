#include "partitioner/pack/out_dir.hpp"

#include <unistd.h>

#include <filesystem>

#include "partitioner/format/layout.hpp"

namespace clairfs::pack {
namespace fs = std::filesystem;

bool IsPackOutputName(const std::string& name) {
  return name == format::kManifestName || name == ".manifest.tmp" || name.rfind("part-", 0) == 0;
}

static bool IsWithin(const fs::path& p, const fs::path& root) {
  auto [r, q] = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
  return r == root.end();
}

Status PrepareOutDir(const std::string& src, const std::string& out, bool force, bool* created) {
  *created = false;
  std::error_code ec;
  const fs::path real_src = fs::canonical(src, ec);
  if (ec) return Status::FromErrno(ec.value(), "source " + src);
  const fs::path real_out = fs::weakly_canonical(fs::absolute(out), ec);
  if (ec) return Status::FromErrno(ec.value(), "output " + out);
  if (real_out == real_src) return Status::InvalidArgument("OUT is the same directory as SRC");
  if (IsWithin(real_out, real_src)) {
    return Status::InvalidArgument("OUT (" + out + ") is inside SRC (" + src +
                                   "): the pack would include itself");
  }
  if (!fs::exists(real_out, ec)) {
    fs::create_directories(real_out, ec);
    if (ec) return Status::FromErrno(ec.value(), "create " + out);
    *created = true;
    return Status::Ok();
  }
  if (!fs::is_directory(real_out, ec))
    return Status::AlreadyExists(out + " exists and is not a directory");
  if (!force) return Status::AlreadyExists(out + " exists; pass --force to replace it");
  for (const auto& e : fs::directory_iterator(real_out, ec)) {
    const std::string name = e.path().filename().string();
    if (!IsPackOutputName(name)) {
      return Status::InvalidArgument(out + " holds " + name +
                                     ", which no pack run wrote; refusing to replace it even "
                                     "with --force");
    }
  }
  if (ec) return Status::FromErrno(ec.value(), "list " + out);
  // The manifest goes first: from here on OUT never looks like a valid pack.
  if (::unlink((real_out / format::kManifestName).c_str()) != 0 && errno != ENOENT) {
    return Status::FromErrno(errno, "remove " + out + "/manifest");
  }
  RemovePartialOutput(real_out.string(), false);
  return Status::Ok();
}

void RemovePartialOutput(const std::string& out, bool created) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out, ec)) {
    if (IsPackOutputName(e.path().filename().string())) fs::remove(e.path(), ec);
  }
  if (created) fs::remove(out, ec);  // only succeeds if empty
}

}  // namespace clairfs::pack
