// clairfsd: serves a clairfs-partition output as a read-only FUSE mount on
// this node. A thin main: configuration, wiring of the core, FUSE session.
// Exit status: 0 after a clean unmount, 1 on a runtime error, 2 on bad usage.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fs/cache/cache_policy.hpp"
#include "fs/cache/ram_cache.hpp"
#include "fs/core/config_loader.hpp"
#include "fs/core/log.hpp"
#include "fs/core/stats.hpp"
#include "fs/fuse/fuse_adapter.hpp"
#include "fs/store/pack_readahead.hpp"
#include "fs/store/payload_source.hpp"
#include "fs/store/posix_pack_store.hpp"
#include "fs/vfs/vfs.hpp"
#include "partitioner/format/manifest.hpp"

namespace fs = clairfs::fs;

namespace {

void LogLines(const std::string& prefix, const std::string& text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    fs::Log(fs::LogLevel::kInfo, prefix + text.substr(pos, nl - pos));
    pos = nl + 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto cl = fs::LoadCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (!cl.ok()) {
    std::string msg = cl.status().message();
    std::fprintf(stderr, "clairfsd: configuration errors:\n");
    size_t pos = 0;
    while (pos <= msg.size()) {
      size_t nl = msg.find('\n', pos);
      if (nl == std::string::npos) nl = msg.size();
      std::fprintf(stderr, "clairfsd:   %s\n", msg.substr(pos, nl - pos).c_str());
      pos = nl + 1;
    }
    std::fprintf(stderr, "clairfsd: see clairfsd --help\n");
    return 2;
  }
  if (cl->help) {
    std::fputs(fs::Usage().c_str(), stdout);
    return 0;
  }
  fs::Config& config = cl->config;
  std::error_code ec;
  // Absolute paths, so logs, /.clairfs/config and /proc/mounts are unambiguous.
  config.dataset = std::filesystem::absolute(config.dataset, ec).lexically_normal().string();
  config.mount = std::filesystem::absolute(config.mount, ec).lexically_normal().string();
  while (config.mount.size() > 1 && config.mount.back() == '/') config.mount.pop_back();
  while (config.dataset.size() > 1 && config.dataset.back() == '/') config.dataset.pop_back();
  fs::SetLogLevel(config.log_level);
  const std::string effective = fs::DescribeConfig(config);
  LogLines("config: ", effective);

  if (!std::filesystem::is_directory(config.mount, ec)) {
    fs::Log(fs::LogLevel::kError, "mount: " + config.mount + " is not a directory");
    return 2;
  }
  auto manifest = clairfs::format::Manifest::Load(config.dataset);
  if (!manifest.ok()) {
    fs::Log(fs::LogLevel::kError, manifest.status().ToString());
    return 1;
  }
  const auto& m = **manifest;
  if (m.Lookup(0, fs::ControlFiles::kDirName)) {
    fs::Log(fs::LogLevel::kWarn, std::string("the dataset has its own /") +
                                     fs::ControlFiles::kDirName +
                                     "; the control directory hides it");
  }
  fs::Log(fs::LogLevel::kInfo, "dataset: " + std::to_string(m.header().file_count) + " files, " +
                                   std::to_string(m.node_count() - m.header().file_count) +
                                   " directories, " + std::to_string(m.header().raw_bytes) +
                                   " bytes in " + std::to_string(m.partition_count()) +
                                   " partitions; manifest " + std::to_string(m.memory_bytes()) +
                                   " bytes in RAM");

  fs::Stats stats;
  fs::PackReadahead readahead(config.pack_readahead);
  fs::PosixPackStore store(config.dataset, *manifest, &readahead);
  fs::LocalPayloadSource source(*manifest, &store);
  fs::RamCache cache(config.ram_cache, std::make_unique<fs::LruPolicy>());
  fs::VfsOptions options;
  options.uid = static_cast<uint32_t>(::getuid());
  options.gid = static_cast<uint32_t>(::getgid());
  options.config_text = effective;
  options.decline_open = config.no_open;
  options.decline_opendir = config.no_opendir;
  fs::Vfs vfs(*manifest, &source, &cache, &stats, options);

  clairfs::Status st = fs::ServeFuse(&vfs, config);
  if (!st.ok()) {
    fs::Log(fs::LogLevel::kError, st.ToString());
    return 1;
  }
  return 0;
}
