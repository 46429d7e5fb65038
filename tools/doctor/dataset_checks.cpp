// The inputs of the job: clairfsd's config and the dataset's manifest and packs.
#include <sys/stat.h>
#include <unistd.h>

#include "fs/config/config_loader.hpp"
#include "fs/dist/path_template.hpp"
#include "partitioner/format/file_io.hpp"
#include "partitioner/format/pack_file.hpp"
#include "tools/doctor/doctor.hpp"
#include "tools/doctor/judge.hpp"

namespace clairfs::doctor {
namespace {

std::string Host() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

std::string Join(const std::vector<std::string>& lines, const char* sep) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : sep) + l;
  return out;
}

}  // namespace

Check CheckConfig(Context* ctx) {
  const DoctorOptions& o = ctx->options;
  fs::Config config;
  std::vector<std::string> errors;
  if (!o.config.empty()) {
    std::vector<char> bytes;
    Status read = format::ReadWholeFile(o.config, &bytes);
    if (read.ok()) {
      fs::ApplyYaml(std::string(bytes.begin(), bytes.end()), o.config, &config, &errors);
    } else {
      errors.push_back(read.message());
    }
  }
  // As clairfs-run starts clairfsd: these on its command line win over the file.
  for (auto [key, value] :
       {std::pair{"dataset", &o.dataset}, {"local_dir", &o.local_dir}, {"mount", &o.mount}}) {
    if (value->empty()) continue;
    Status st = fs::SetConfigValue(&config, key, *value);
    if (!st.ok()) errors.push_back("--" + st.message());
  }
  // The doctor needs no mount point, and a missing dataset is the manifest's
  // check (skipped): only the config's other rules are checked here.
  fs::Config complete = config;
  if (complete.cluster.dataset.empty()) complete.cluster.dataset = "-";
  if (complete.fuse.mount.empty()) complete.fuse.mount = "-";
  for (std::string& e : fs::ValidateConfig(complete)) errors.push_back(std::move(e));
  if (!errors.empty()) {
    // The other checks go on with the paths of the command line; those that
    // need the config's values are skipped.
    config = fs::Config();
    config.cluster.dataset = o.dataset;
    config.cluster.local_dir = o.local_dir;
    ctx->config_refused = true;
  }
  ctx->config = std::move(config);
  const std::string host = Host();
  const int rank = static_cast<int>(ctx->rank);
  for (auto [pattern, out] : {std::pair{&ctx->config.cluster.dataset, &ctx->dataset},
                              {&ctx->config.cluster.local_dir, &ctx->local_dir}}) {
    if (pattern->empty()) continue;
    auto expanded = fs::ExpandPath(*pattern, rank, host);
    if (expanded.ok()) {
      *out = *expanded;
    } else {
      errors.push_back(expanded.status().message());
    }
  }
  if (!errors.empty()) {
    return Check::Problem("config",
                          "clairfsd would refuse its configuration: " + Join(errors, "; "),
                          "correct " + (o.config.empty() ? std::string("the options") : o.config) +
                              " (clairfsd --help lists every key and its values; a variable a "
                              "path names must be set in the job's environment)");
  }
  if (o.config.empty()) return Check::Ok("config", "no --config: clairfsd's defaults");
  return Check::Ok("config", o.config + " loads (ram_cache " + HumanBytes(ctx->config.ram_cache) +
                                 ", prefetch_sampler " + ctx->config.prefetch_sampler + ")");
}

Check CheckManifest(Context* ctx) {
  if (ctx->dataset.empty()) {
    return Check::Skipped("manifest", "no --dataset (nor dataset in the config)");
  }
  auto loaded = format::Manifest::Load(ctx->dataset);
  if (!loaded.ok()) {
    const Status& st = loaded.status();
    if (st.IsCorruption()) {
      return Check::Problem("manifest", "corrupt: " + st.message(),
                            "pack the dataset again (clairfs-partition pack SRC " + ctx->dataset +
                                "), or restore the manifest from a copy");
    }
    struct stat dir;
    if (st.IsNotFound() && ::stat(ctx->dataset.c_str(), &dir) != 0) {
      return Check::Problem("manifest", "dataset " + ctx->dataset + " is not visible",
                            "put it on a file system that every node mounts (the shared file "
                            "system), or give the path under which the nodes see it");
    }
    return Check::Problem("manifest", st.message(),
                          "--dataset must be the output directory of clairfs-partition pack "
                          "(and that run must have finished), readable by you");
  }
  const format::Manifest& m = **loaded;
  ctx->manifest = *loaded;
  uint64_t files = 0, bytes = 0;
  for (uint32_t i = 0; i < m.node_count(); ++i) files += !m.IsDirectory(i);
  std::vector<std::string> bad;
  for (uint32_t p = 0; p <= m.partition_count(); ++p) {
    bytes += m.partition(p).pack_bytes;
    Status st = ctx->options.verify_packs ? format::VerifyPackChecksum(ctx->dataset, m, p)
                                          : format::OpenPack(ctx->dataset, m, p).status();
    if (!st.ok()) bad.push_back(st.message());
  }
  const std::string what = ctx->dataset + "/manifest: " + std::to_string(files) + " files, " +
                           std::to_string(m.partition_count() + 1) + " packs of " +
                           HumanBytes(bytes);
  if (!bad.empty()) {
    const size_t count = bad.size();
    if (count > 3) bad.resize(3);
    if (count > 3) bad.push_back("and " + std::to_string(count - 3) + " more");
    return Check::Problem(
        "manifest", what + "; a pack is missing or damaged: " + Join(bad, "; "),
        "pack the dataset again, or copy the missing packs back into " + ctx->dataset);
  }
  return Check::Ok("manifest",
                   what + (ctx->options.verify_packs ? ", every pack's checksum verified"
                                                     : ", each pack present (size and header; "
                                                       "--verify-packs reads them whole)"));
}

}  // namespace clairfs::doctor
