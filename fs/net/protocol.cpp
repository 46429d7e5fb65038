#include "fs/net/protocol.hpp"

#include <cstring>

namespace clairfs::fs::wire {
namespace {

template <typename T>
void Put(std::vector<char>* out, const T& v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out->insert(out->end(), p, p + sizeof v);
}

Result<BatchHeader> Header(const char* data, size_t size, uint32_t magic, size_t entry_size) {
  BatchHeader h;
  if (size < sizeof h) return Status::Corruption("transport message shorter than its header");
  std::memcpy(&h, data, sizeof h);
  if (h.magic != magic) return Status::Corruption("transport message has a bad magic");
  if (h.count > kMaxBatch || sizeof h + uint64_t{h.count} * entry_size > size) {
    return Status::Corruption("transport message count " + std::to_string(h.count) +
                              " does not fit its " + std::to_string(size) + " bytes");
  }
  return h;
}

}  // namespace

std::vector<char> EncodeRequests(const std::vector<Request>& requests) {
  std::vector<char> out;
  out.reserve(sizeof(BatchHeader) + requests.size() * sizeof(RequestEntry));
  Put(&out, BatchHeader{kRequestMagic, static_cast<uint32_t>(requests.size())});
  for (const Request& r : requests) {
    Put(&out, RequestEntry{r.id, r.read.offset, r.read.partition, r.read.length, r.read.frame_at});
  }
  return out;
}

Result<std::vector<Request>> DecodeRequests(const char* data, size_t size) {
  auto h = Header(data, size, kRequestMagic, sizeof(RequestEntry));
  if (!h.ok()) return h.status();
  if (sizeof(BatchHeader) + uint64_t{h->count} * sizeof(RequestEntry) != size) {
    return Status::Corruption("request batch has trailing bytes");
  }
  std::vector<Request> out(h->count);
  for (uint32_t i = 0; i < h->count; ++i) {
    RequestEntry e;
    std::memcpy(&e, data + sizeof(BatchHeader) + i * sizeof e, sizeof e);
    if (e.frame_at != kNoFrame && e.length != 0 && e.partition != kAreaPartition) {
      return Status::Corruption("a frame read with a length");
    }
    out[i] = {e.id, PackRead{e.partition, e.offset, e.length, e.frame_at}};
  }
  return out;
}

std::vector<char> EncodeReplies(const std::vector<Reply>& replies) {
  size_t total = sizeof(BatchHeader) + replies.size() * sizeof(ReplyEntry);
  for (const Reply& r : replies) total += r.data.size();
  std::vector<char> out;
  out.reserve(total);
  Put(&out, BatchHeader{kReplyMagic, static_cast<uint32_t>(replies.size())});
  for (const Reply& r : replies) {
    Put(&out, ReplyEntry{r.id, r.err, static_cast<uint32_t>(r.err ? 0 : r.data.size())});
  }
  for (const Reply& r : replies) {
    if (!r.err) out.insert(out.end(), r.data.begin(), r.data.end());
  }
  return out;
}

Result<std::vector<ReplyView>> DecodeReplies(const char* data, size_t size) {
  auto h = Header(data, size, kReplyMagic, sizeof(ReplyEntry));
  if (!h.ok()) return h.status();
  std::vector<ReplyView> out(h->count);
  uint64_t pos = sizeof(BatchHeader) + uint64_t{h->count} * sizeof(ReplyEntry);
  for (uint32_t i = 0; i < h->count; ++i) {
    ReplyEntry e;
    std::memcpy(&e, data + sizeof(BatchHeader) + i * sizeof e, sizeof e);
    if (e.length > size - pos)
      return Status::Corruption("reply batch payloads overrun the message");
    out[i].id = e.id;
    out[i].err = e.err;
    out[i].data = std::span<const char>(data + pos, e.length);
    pos += e.length;
  }
  if (pos != size) return Status::Corruption("reply batch has trailing bytes");
  return out;
}

std::vector<char> EncodeNotices(const std::vector<std::vector<char>>& notices) {
  return EncodeNotices(std::vector<std::span<const char>>(notices.begin(), notices.end()));
}

std::vector<char> EncodeNotices(const std::vector<std::span<const char>>& notices) {
  size_t total = sizeof(BatchHeader);
  for (const auto& n : notices) total += sizeof(uint32_t) + n.size();
  std::vector<char> out;
  out.reserve(total);
  Put(&out, BatchHeader{kNoticeMagic, static_cast<uint32_t>(notices.size())});
  for (const auto& n : notices) {
    Put(&out, static_cast<uint32_t>(n.size()));
    out.insert(out.end(), n.begin(), n.end());
  }
  return out;
}

Result<std::vector<std::span<const char>>> DecodeNotices(const char* data, size_t size) {
  // Every notice takes its length field and at least one byte.
  auto h = Header(data, size, kNoticeMagic, sizeof(uint32_t) + 1);
  if (!h.ok()) return h.status();
  std::vector<std::span<const char>> out(h->count);
  uint64_t pos = sizeof(BatchHeader);
  for (uint32_t i = 0; i < h->count; ++i) {
    uint32_t length;
    if (sizeof length > size - pos) return Status::Corruption("notice batch ends inside a length");
    std::memcpy(&length, data + pos, sizeof length);
    pos += sizeof length;
    if (length == 0 || length > kMaxNoticeBytes) {
      return Status::Corruption("notice of " + std::to_string(length) + " bytes");
    }
    if (length > size - pos) return Status::Corruption("notice batch overruns the message");
    out[i] = std::span<const char>(data + pos, length);
    pos += length;
  }
  if (pos != size) return Status::Corruption("notice batch has trailing bytes");
  return out;
}

}  // namespace clairfs::fs::wire
