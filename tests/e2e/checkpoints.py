"""Saves or loads a checkpoint the way one library writes it, and prints a
digest of the values (not of the file's bytes), so that what one process
saved and another loaded can be compared:

    python checkpoints.py KIND save DIR     # writes under DIR, prints the digest
    python checkpoints.py KIND load DIR     # reads it back, prints the digest

KIND: torch (torch.save to a temporary file, fsync, rename over the last one),
safetensors (numpy API), h5py (a file updated in place at random offsets),
keras (Keras 3 ModelCheckpoint, .keras) or keras-h5 (Keras 2 ModelCheckpoint,
.h5). Used by tests/e2e/writes_e2e_test.sh; run with the Python that has the
library (torch: Debian's; the others: the TensorFlow venvs)."""
import hashlib
import os
import sys
import tempfile


def digest(arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def torch_ckpt(mode, d):
    import torch
    path = os.path.join(d, "model.pt")
    if mode == "save":
        torch.manual_seed(0)
        for step in range(3):  # three saves, each replacing the last
            model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4 + step))
            with tempfile.NamedTemporaryFile(dir=d, delete=False) as f:
                torch.save(model.state_dict(), f)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(f.name, 0o644)
            os.replace(f.name, path)
        state = model.state_dict()
    else:
        state = torch.load(path)
    return digest(state[k].numpy() for k in sorted(state))


def safetensors_ckpt(mode, d):
    import numpy as np
    from safetensors.numpy import load_file, save_file
    path = os.path.join(d, "model.safetensors")
    if mode == "save":
        rng = np.random.default_rng(1)
        tensors = {f"layer{i}.weight": rng.standard_normal((128, 64 + i), dtype=np.float32) for i in range(8)}
        save_file(tensors, path)
    else:
        tensors = load_file(path)
    return digest(tensors[k] for k in sorted(tensors))


def h5py_ckpt(mode, d):
    import h5py
    import numpy as np
    path = os.path.join(d, "state.h5")
    if mode == "save":
        with h5py.File(path, "w") as f:
            f.create_dataset("w", data=np.zeros((512, 512), np.float32), chunks=(32, 32))
            f.create_dataset("step", data=np.arange(1000))
        rng = np.random.default_rng(3)
        with h5py.File(path, "r+") as f:  # in place, at random offsets
            for _ in range(60):
                i, j = rng.integers(0, 480, 2)
                f["w"][i:i + 32, j:j + 32] = rng.standard_normal((32, 32), dtype=np.float32)
            f["step"][10:20] = -1
            f.attrs["epoch"] = 7
    with h5py.File(path, "r") as f:
        return digest([f["w"][:], f["step"][:], np.array([f.attrs["epoch"]])])


def keras_ckpt(mode, d, ext):
    import keras
    import numpy as np
    if mode == "save":
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation="relu"),
                                  keras.layers.Dense(3)])
        model.compile(optimizer="adam", loss="mse")
        x = np.random.default_rng(0).standard_normal((64, 16)).astype("float32")
        y = np.random.default_rng(1).standard_normal((64, 3)).astype("float32")
        ckpt = keras.callbacks.ModelCheckpoint(os.path.join(d, "ckpt-{epoch:02d}." + ext))
        model.fit(x, y, epochs=3, batch_size=16, callbacks=[ckpt], verbose=0)
    else:
        model = keras.models.load_model(os.path.join(d, "ckpt-03." + ext))
    return digest(model.get_weights())


def main():
    kind, mode, d = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(d, exist_ok=True)
    fn = {"torch": torch_ckpt, "safetensors": safetensors_ckpt, "h5py": h5py_ckpt,
          "keras": lambda m, p: keras_ckpt(m, p, "keras"),
          "keras-h5": lambda m, p: keras_ckpt(m, p, "h5")}[kind]
    print(fn(mode, d))


if __name__ == "__main__":
    main()
