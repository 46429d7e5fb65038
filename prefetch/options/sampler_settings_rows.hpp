// The rows and the checks across settings of sampler_settings.cpp that live
// in their own files: tf.data (sampler_settings_tf.cpp) and Keras
// (sampler_settings_keras.cpp). Internal to prefetch/options. Pure.
#pragma once

#include <string>
#include <vector>

#include "prefetch/options/sampler_settings.hpp"

namespace clairfs::prefetch {

std::vector<SamplerSetting> TfSettingRows();
std::vector<SamplerSetting> KerasSettingRows();

// After every row has been set: what needs several settings at once.
void CheckTfSettings(SettingContext& ctx);
void CheckKerasSettings(SettingContext& ctx);

// Where a batch size goes for the sampler spec.kind uses (keras, keras-flow,
// tf-list-files).
void SetBatchSize(OrderSpec& spec, uint64_t batch_size);

// Parsers shared by the rows. "1.5,b" -> {"1.5", "b"}.
std::vector<std::string> SplitCommas(const std::string& s);
bool ParseU64Text(const std::string& s, uint64_t& out);
bool ParseI64Text(const std::string& s, int64_t& out);

}  // namespace clairfs::prefetch
