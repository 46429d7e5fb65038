#include "fs/dist/manifest_envelope.hpp"

#include <string>

namespace clairfs::fs {

std::vector<char> EncodeManifestEnvelope(const Result<std::vector<char>>& manifest) {
  std::vector<char> out;
  if (manifest.ok()) {
    out.reserve(manifest->size() + 1);
    out.push_back(1);
    out.insert(out.end(), manifest->begin(), manifest->end());
  } else {
    const std::string msg = manifest.status().ToString();
    out.push_back(0);
    out.insert(out.end(), msg.begin(), msg.end());
  }
  return out;
}

Result<std::vector<char>> DecodeManifestEnvelope(std::vector<char> envelope) {
  if (envelope.empty() || envelope[0] != 1) {
    const std::string msg(envelope.begin() + (envelope.empty() ? 0 : 1), envelope.end());
    return Status::IOError("rank 0 could not read the manifest: " + msg);
  }
  envelope.erase(envelope.begin());
  return envelope;
}

}  // namespace clairfs::fs
