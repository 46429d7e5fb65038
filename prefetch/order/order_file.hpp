// OrderFile: the clairfs order file, for access orders no built-in sampler
// reproduces. Format (docs/order.md has the full description):
//
//   # clairfs-order v1
//   # entries paths            (or "indices"; optional, default paths)
//   # world-size 2             (optional)
//   # layout image-folder      (optional: what indices count in; or "list")
//   # epoch 0 rank 0
//   cls/a.jpg
//   cls/b.jpg
//   # epoch 0 rank 1
//   ...
//
// The first line is the magic. Lines starting with '#' are directives when
// they match one of the forms above and comments otherwise; every other
// non-empty line is one entry of the current section, taken byte for byte.
// Consequently a path that starts with '#', contains a newline or is empty
// cannot be represented; the writer refuses it. Value type; thread-compatible.
// Parsing and formatting are pure; file I/O is in Read/WriteOrderFile.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.hpp"
#include "prefetch/order/sampler.hpp"

namespace clairfs::prefetch {

inline constexpr std::string_view kOrderFileMagic = "# clairfs-order v1";

struct OrderFile {
  enum class Entries { kPaths, kIndices };

  Entries entries = Entries::kPaths;
  std::optional<uint64_t> world_size;  // declared, or derived as max rank + 1
  // "# layout": which listing an index file's indices count in, "image-folder"
  // or "list" (the `layout` setting's values); empty when not declared.
  std::string layout;
  // Keyed by (epoch, rank). For kPaths `paths` is filled, for kIndices `indices`.
  struct Section {
    std::vector<std::string> paths;
    std::vector<Index> indices;
  };
  std::map<std::pair<uint64_t, uint64_t>, Section> sections;

  // Declared world size, else one more than the largest rank present.
  uint64_t EffectiveWorldSize() const;
  // Epochs present for `rank`, ascending.
  std::vector<uint64_t> EpochsOf(uint64_t rank) const;
};

// Corruption with "NAME:LINE: why" for malformed input.
Result<OrderFile> ParseOrderFile(std::string_view text, const std::string& name);
Result<OrderFile> ReadOrderFile(const std::string& file);

// InvalidArgument naming the section and entry when a path is unrepresentable
// or a rank is outside a declared world size.
Result<std::string> FormatOrderFile(const OrderFile& order);
Status WriteOrderFile(const std::string& file, const OrderFile& order);

}  // namespace clairfs::prefetch
