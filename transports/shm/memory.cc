// Memory segments of mem_alloc(), registrations and exported keys.
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "connection.h"
#include "horovod_plugin/boundary.h"
#include "names.h"
#include "transport.h"

namespace hvd_shm {

using hvd_plugin::refuse;

namespace {

constexpr size_t kPage = 4096;

hvd_status host_only(hvd_device device, const char* what) {
  if (device.kind == HVD_MEM_HOST) return HVD_OK;
  return refuse(HVD_ERR_UNSUPPORTED, std::string("shm: ") + what +
                                         ": only host memory is supported");
}

}  // namespace

hvd_status Transport::mem_alloc(size_t bytes, hvd_device device, void** ptr,
                                MemoryRegion** mr) {
  if (hvd_status s = host_only(device, "mem_alloc"); s != HVD_OK) return s;
  uint64_t id = next_memory_id();
  size_t size = std::max<size_t>((bytes + kPage - 1) & ~(kPage - 1), kPage);
  auto region = std::make_unique<MemoryRegion>();
  region->owned =
      Segment::create(memory_segment_name(name_prefix(), id), size, false);
  region->owned->close_fd();
  region->base = static_cast<uint8_t*>(region->owned->base());
  region->bytes = bytes;
  region->in_segment = true;
  region->segment = id;
  region->offset = 0;
  regions_.push_back(region.get());
  *ptr = region->base;
  *mr = region.release();
  return HVD_OK;
}

hvd_status Transport::mem_free(void* ptr, MemoryRegion* mr) {
  auto it = std::find(regions_.begin(), regions_.end(), mr);
  if (it == regions_.end() || mr->owned == nullptr || mr->base != ptr) {
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "shm: mem_free of memory that mem_alloc did not give");
  }
  regions_.erase(it);
  delete mr;
  return HVD_OK;
}

hvd_status Transport::mr_reg(void* buf, size_t bytes, hvd_device device,
                             MemoryRegion** mr) {
  if (hvd_status s = host_only(device, "mr_reg"); s != HVD_OK) return s;
  auto region = std::make_unique<MemoryRegion>();
  region->base = static_cast<uint8_t*>(buf);
  region->bytes = bytes;
  region->in_segment =
      locate(buf, bytes, nullptr, &region->segment, &region->offset);
  regions_.push_back(region.get());
  *mr = region.release();
  return HVD_OK;
}

hvd_status Transport::mr_dereg(MemoryRegion* mr) {
  auto it = std::find(regions_.begin(), regions_.end(), mr);
  if (it == regions_.end()) {
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "shm: mr_dereg of an unknown registration");
  }
  if (mr->owned != nullptr) {
    return refuse(HVD_ERR_INVALID_ARGUMENT,
                  "shm: memory from mem_alloc is released with mem_free");
  }
  regions_.erase(it);
  delete mr;
  return HVD_OK;
}

hvd_status Transport::mr_export(MemoryRegion* mr, void* key,
                                size_t* key_bytes) {
  if (!mr->in_segment) {
    return refuse(HVD_ERR_UNSUPPORTED,
                  "shm: mr_export: only memory inside a segment from "
                  "mem_alloc can be reached by peers");
  }
  if (*key_bytes < sizeof(MemoryKey)) {
    *key_bytes = sizeof(MemoryKey);
    return refuse(HVD_ERR_TRUNCATED, "shm: mr_export: key buffer too small");
  }
  MemoryKey k{};
  k.magic = kKeyMagic;
  k.pid = static_cast<uint32_t>(getpid());
  k.segment = mr->segment;
  k.offset = mr->offset;
  k.bytes = mr->bytes;
  std::snprintf(k.boot_id, sizeof(k.boot_id), "%s", boot_id().c_str());
  std::snprintf(k.prefix, sizeof(k.prefix), "%s", name_prefix().c_str());
  std::memcpy(key, &k, sizeof(k));
  *key_bytes = sizeof(k);
  return HVD_OK;
}

bool Transport::locate(const void* buf, uint64_t bytes, const MemoryRegion*,
                       uint64_t* segment, uint64_t* offset) const {
  const auto* p = static_cast<const uint8_t*>(buf);
  for (const MemoryRegion* r : regions_) {
    if (r->owned == nullptr) continue;
    const uint8_t* base = r->base;
    if (p >= base && p <= base + r->owned->size() &&
        bytes <= static_cast<uint64_t>(base + r->owned->size() - p)) {
      *segment = r->segment;
      *offset = static_cast<uint64_t>(p - base);
      return true;
    }
  }
  return false;
}

std::shared_ptr<Segment> Transport::map_peer_segment(const std::string& name) {
  auto it = peer_segments_.find(name);
  if (it != peer_segments_.end()) {
    if (std::shared_ptr<Segment> s = it->second.lock()) return s;
  }
  std::shared_ptr<Segment> s = Segment::open(name);
  for (auto i = peer_segments_.begin(); i != peer_segments_.end();) {
    i = i->second.expired() ? peer_segments_.erase(i) : std::next(i);
  }
  peer_segments_[name] = s;
  return s;
}

}  // namespace hvd_shm
