// fuzz_seeds CORPUS DATASET...: writes the fuzz targets' seed corpus into
// CORPUS/<target>/ from packed datasets (clairfs-partition outputs): their
// manifests, a few payloads of each codec as fuzz::PayloadInput cases, request,
// reply and notice batches and manifest envelopes, a few configs, and order reporters'
// connections (report_fuzz: a chunking byte, then the stream). Run by
// tests/fuzz/make_corpus.sh.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "fs/config/config.hpp"
#include "fs/dist/manifest_envelope.hpp"
#include "fs/net/protocol.hpp"
#include "partitioner/format/codec.hpp"
#include "partitioner/format/file_io.hpp"
#include "partitioner/format/manifest.hpp"
#include "tests/fuzz/fuzz_inputs.hpp"
#include "tests/fuzz/report_seeds.hpp"

namespace {

namespace stdfs = std::filesystem;
using namespace clairfs;

constexpr uint64_t kMaxSeedFile = 16 << 10;  // larger files are left out of the corpus
constexpr int kPerCodec = 2;                 // payload seeds per codec and dataset

void Write(const stdfs::path& path, const std::vector<char>& bytes) {
  stdfs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void Write(const stdfs::path& path, const std::string& text) {
  Write(path, std::vector<char>(text.begin(), text.end()));
}

template <typename T>
std::vector<char> Prefixed(const T& head, const std::vector<char>& rest) {
  std::vector<char> out(reinterpret_cast<const char*>(&head),
                        reinterpret_cast<const char*>(&head) + sizeof head);
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

Status PayloadSeeds(const stdfs::path& corpus, const std::string& name, const std::string& dir,
                    const format::Manifest& m) {
  std::map<uint8_t, int> taken;  // codec -> seeds written
  for (uint32_t i = 0; i < m.node_count(); ++i) {
    const format::NodeRecord& r = m.node(i);
    if (m.IsDirectory(i) || r.stored_size > kMaxSeedFile || taken[r.codec] == kPerCodec) continue;
    auto pack = format::PosixRandomAccessFile::Open(dir + "/" + m.PackName(r.partition));
    if (!pack.ok()) return pack.status();
    std::vector<char> stored(r.stored_size);
    CLAIRFS_RETURN_IF_ERROR((*pack)->ReadExact(r.offset, r.stored_size, stored.data()));
    const auto size = static_cast<uint32_t>(r.size);
    fuzz::PayloadInput in{r.checksum, size, size / 3, size / 2, r.codec, 0, 0};
    const std::string seed =
        name + "-codec" + std::to_string(r.codec) + "-" + std::to_string(taken[r.codec]++);
    Write(corpus / "payload" / seed, Prefixed(in, stored));
    in.flags = fuzz::kResealPayload | fuzz::kResealFrames;
    Write(corpus / "payload" / (seed + "-resealed"), Prefixed(in, stored));
  }
  return Status::Ok();
}

std::vector<char> Selected(fuzz::ProtocolMessage kind, const std::vector<char>& msg) {
  return Prefixed(static_cast<uint8_t>(kind), msg);
}

void ProtocolSeeds(const stdfs::path& corpus, const std::vector<char>& manifest) {
  using fuzz::ProtocolMessage;
  const std::vector<fs::wire::Request> reqs = {
      {1, {0, 32, 4096}}, {2, {1, 8192, 100}}, {3, {2, 0, 32}}, {4, {1, 32, 0, 5000}}};
  Write(corpus / "protocol" / "requests",
        Selected(ProtocolMessage::kRequests, fs::wire::EncodeRequests(reqs)));
  const std::vector<fs::wire::Reply> replies = {
      {1, 0, {'p', 'a', 'c', 'k'}},
      {2, EIO, {}},
      {3, 0, std::vector<char>(manifest.begin(), manifest.begin() + 64)}};
  Write(corpus / "protocol" / "replies",
        Selected(ProtocolMessage::kReplies, fs::wire::EncodeReplies(replies)));
  const std::string written = "train/shard-00017.tfrecord\t1048576";
  const std::vector<std::vector<char>> notices = {
      {written.begin(), written.end()}, {'x'}, std::vector<char>(300, '\0')};
  Write(corpus / "protocol" / "notices",
        Selected(ProtocolMessage::kNotices, fs::wire::EncodeNotices(notices)));
  Write(corpus / "protocol" / "envelope-manifest",
        Selected(ProtocolMessage::kManifestEnvelope, fs::EncodeManifestEnvelope(manifest)));
  const Status missing = Status::NotFound("/data/set/manifest: no manifest");
  Write(corpus / "protocol" / "envelope-error",
        Selected(ProtocolMessage::kManifestEnvelope,
                 fs::EncodeManifestEnvelope(Result<std::vector<char>>(missing))));
  // A frame read of a framed payload (3 frames, text and noise) after a pack header.
  std::string text;
  for (int i = 0; text.size() < 3 * 4096; ++i)
    text += "frame seed line " + std::to_string(i) + "\n";
  std::vector<char> file(text.begin(), text.begin() + 3 * 4096);
  for (size_t i = 4096; i < 8192; ++i) file[i] = static_cast<char>(i * 2654435761u >> 13);
  format::PayloadEncoder encoder(format::EncodeOptions{.zstd_level = 3, .frame_size = 4096});
  format::EncodedPayload enc;
  if (encoder.Encode(file.data(), file.size(), &enc).ok()) {
    std::vector<char> pack(sizeof(format::PackHeader), 0);
    pack.insert(pack.end(), enc.bytes.begin(), enc.bytes.end());
    for (uint64_t at : {uint64_t{100}, uint64_t{5000}}) {
      const fuzz::FrameReadInput in{sizeof(format::PackHeader), at, 1u << 20, 4096};
      Write(corpus / "protocol" / ("frame-read-" + std::to_string(at)),
            Selected(ProtocolMessage::kFrameRead, Prefixed(in, pack)));
    }
  }
}

void ConfigSeeds(const stdfs::path& corpus) {
  fs::Config c;
  c.cluster.dataset = "/scratch/imagenet.clairfs";
  c.fuse.mount = "/tmp/clairfs-{rank}";
  Write(corpus / "config" / "described-defaults", fs::DescribeConfig(c));
  Write(corpus / "config" / "minimal",
        std::string("dataset: /scratch/ds\nmount: /tmp/mnt\nram_cache: 4G\n"));
  Write(corpus / "config" / "prefetch", std::string("# a training job's sampler\n"
                                                    "dataset: ${SCRATCH:-/scratch}/ds\n"
                                                    "mount: /tmp/mnt-{host}\n"
                                                    "local_dir: /local/$USER\n"
                                                    "prefetch_sampler: torch-distributed\n"
                                                    "prefetch_world_size: 8\n"
                                                    "prefetch_seed: 42\n"
                                                    "prefetch_drop_last: true\n"
                                                    "entry_timeout: 1.5\n"
                                                    "log_level: debug\n"));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fuzz_seeds CORPUS DATASET...\n");
    return 2;
  }
  const stdfs::path corpus = argv[1];
  std::vector<char> first_manifest;
  for (int a = 2; a < argc; ++a) {
    const std::string dir = argv[a];
    const std::string name = stdfs::path(dir).filename().string();
    std::vector<char> bytes;
    std::string file;
    Status st = format::Manifest::ReadFile(dir, &bytes, &file);
    auto m = st.ok() ? format::Manifest::Parse(bytes, file)
                     : Result<std::shared_ptr<const format::Manifest>>(st);
    if (m.ok()) st = PayloadSeeds(corpus, name, dir, **m);
    if (!m.ok() || !st.ok()) {
      std::fprintf(stderr, "fuzz_seeds: %s\n", (m.ok() ? st : m.status()).ToString().c_str());
      return 1;
    }
    Write(corpus / "manifest" / name, bytes);
    if (first_manifest.empty()) first_manifest = bytes;
  }
  ProtocolSeeds(corpus, first_manifest);
  ConfigSeeds(corpus);
  for (const auto& [name, bytes] : fuzz::ReportSeeds()) Write(corpus / "report" / name, bytes);
  return 0;
}
