// The mount's inode numbers: manifest node n is inode n + 1 (the root, node
// 0, is inode 1, as FUSE requires); the control files come after the last
// node. Every part that names a file to the kernel converts through here.
#pragma once

#include <cstdint>

namespace clairfs::fs {

inline uint64_t InodeOfNode(uint32_t node) { return uint64_t{node} + 1; }
// `ino` must be a node's inode (1 to node count).
inline uint32_t NodeOfInode(uint64_t ino) { return static_cast<uint32_t>(ino - 1); }

}  // namespace clairfs::fs
