// The --help text of clairfs-order; kept apart from the parser so each stays short.
#include "tools/order/usage.hpp"

namespace clairfs::tools {

namespace {
constexpr const char* kUsage =
    R"(usage: clairfs-order --sampler KIND (--root DIR | --listing FILE) [options]

Prints, one per line, the files (relative to the dataset root) that one training
rank opens, in order, epoch after epoch.

Samplers (--sampler, default torch-distributed):
  torch-distributed  torch DistributedSampler over a torchvision ImageFolder
  torch-random       torch RandomSampler with a seeded torch.Generator
  torch-sequential   DataLoader(shuffle=False)
  keras              keras.utils.image_dataset_from_directory
  keras-flow         ImageDataGenerator().flow_from_directory
  order-file         replay an order file (docs/order.md)
  tf-list-files      tf.data.Dataset.list_files(ROOT/GLOB, seed=S) [+ shuffle/shard]

Dataset:
  --root DIR             scan this directory tree (symlinks followed)
  --listing FILE         or read relative paths from FILE (trailing '/' = directory)
  --layout L             image-folder (default) or list (torch kinds: the listing's
                         files in the given order)
  --extensions LIST      comma-separated ImageFolder extensions (default torchvision's)

Epochs and ranks:
  --epochs E             print epochs 0 .. E-1 (default 1; order-file: every epoch
                         the file has for the rank)
  --epoch e              print only epoch e
  --world-size R         number of ranks, DistributedSampler num_replicas (default 1)
  --rank r               the rank to print (default 0)
  --indices              print dataset indices instead of paths

torch-distributed:
  --seed S               sampler seed (default 0; only (S + epoch) mod 2^32 matters)
  --drop-last            drop_last=True
  --no-shuffle           shuffle=False
  --no-set-epoch         the script never calls set_epoch: every epoch repeats epoch 0
torch-random:
  --generator-seed G     the generator's manual_seed (default 0)
  --num-samples K        RandomSampler num_samples (default: dataset size)
  --loader-generator M   none (default): the DataLoader has no generator of its own;
                         every-epoch: DataLoader(shuffle=True, generator=g), which
                         draws a base seed from g every epoch; persistent: the same
                         with persistent_workers=True (draws once)
torch kinds:
  --torch-version V      torch release (default 1.13); from 2.7 randperm of
                         n >= 214748364 uses another algorithm
keras:
  --seed S               the listing seed, 0 <= S < 2^32 (required, or:)
  --numpy-seed G         seed=None after keras.utils.set_random_seed(G) (or
                         np.random.seed(G)): Keras draws np.random.randint(1e6)
  --keras-version V      MAJOR.MINOR[.PATCH], 2.x (tf.keras) or 3.x (default 3.15)
  --class-names A,B      class_names=[...] (Keras 3: a subset, walked in this order)
  --follow-links         follow_links=True
  --no-shuffle           shuffle=False
  --labels L             inferred (default) or none (walk the root as one class)
  --validation-split F   with --subset training (default) or validation
  --batch-size B         batch_size (default 32; 'none' = batch_size=None). From
                         Keras 3.3 the paths go through a tf.data shuffle of 8 x B
                         (1024 for none) seeded with --seed: the order is exact,
                         and --global-seed, --driver (default keras3-fit),
                         --steps-per-epoch and --validation-same apply
keras-flow (flow_from_directory; --keras-version, --batch-size as above):
  --seed S               flow_from_directory seed (required unless --no-shuffle)
  --no-shuffle           shuffle=False
  --classes A,B          classes=[...]
  --follow-links         follow_links=True
  --validation-split F   ImageDataGenerator(validation_split=F), with
  --subset S             training or validation
  --augment LIST         ImageDataGenerator options, e.g. "rotation_range=10,
                         width_shift_range=0.1,zoom_range=0.8:1.2" (':' = a list)
  --protocol P           next (default): next(it) E * len(it) times; fit: model.fit
  --fit-shuffle on|off   model.fit(shuffle=) (default on: batch order unknown,
                         batches printed in batch-index order)
  --steps-per-epoch S    model.fit(steps_per_epoch=S), 1 <= S <= len(it); below
                         len(it) only epoch 0 has a known permutation (tf.data
                         reads ahead while on_epoch_end re-permutes): later
                         epochs are refused, --batches lists their candidates
  --batches              instead of paths, per epoch: "epoch E trains R
                         read-ahead A positions k...", then one "permutation
                         i..." line per candidate index array (dataset indices)
  --fit-validation-seed V  fit(validation_data=) is the same generator's
                         subset="validation" iterator with seed V (tf.keras 2 runs
                         it before the training permutation; Keras 3 after)
tf-list-files (rank = shard index, world size = number of shards):
  --glob PATTERN         the pattern relative to --root (* ? [...] per component)
  --seed S               list_files' / shuffle's seed= (any 64-bit integer)
  --global-seed G        tf.random.set_seed(G) ran before the pipeline was built
  --op-seed-draw K       with --global-seed and no --seed: the dataset's op seed is
                         draw K (0 = first) of the global seed's counter
  --no-shuffle           list_files(shuffle=False) and no shuffle
  --buffer-size B        list_files(shuffle=False).shuffle(B, seed=S) (default: all)
  --no-reshuffle         reshuffle_each_iteration=False
  --shard N              .shard(N, I) after the shuffle (default 1)
  --shard-index I        this worker's I (default 0)
  --shard-before-shuffle list_files(shuffle=False).shard(N, I).shuffle(B, seed=S)
  --repeat N|forever     .repeat(N) / .repeat() after the shuffle (and the shard):
                         every pass is a new shuffle (default 1)
  --repeat-before-shuffle  .repeat(N).shuffle(B, seed=S): one shuffle over the
                         repeated input (--buffer-size default: one pass)
  --no-repeat-fusion     options.experimental_optimization.shuffle_and_repeat_fusion
                         = False
  --batch-size B         .batch(B) (fit drivers count batches; default unbatched)
tf.data drivers (tf-list-files and keras >= 3.3):
  --driver D             loop (default for tf-list-files): for epoch: for x in ds;
                         keras3-fit: Keras 3 model.fit; keras2-fit: tf.keras 2 fit
  --steps-per-epoch K    fit(steps_per_epoch=K)
  --validation-same      fit(validation_data=ds) with the same dataset object: each
                         epoch prints the training pass, then the validation pass
order-file:
  --order-file F         the order file to replay; with --root/--listing its
                         entries are checked against the dataset (ImageFolder
                         indices for an index order file)

A shuffle without any seed (no --seed, no --global-seed) is refused: TensorFlow
would pick a random one. Pass seed= to the shuffle / list_files.
)";
}  // namespace

std::string UsageText() { return kUsage; }

}  // namespace clairfs::tools
