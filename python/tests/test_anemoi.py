"""chute.anemoi(): every sample equals anemoi-datasets' open_dataset(...)[window] rearranged as
anemoi-training does, for stores made by hand in the anemoi-datasets/ufs2arco layout and by
`anemoi-datasets create`. anemoi-datasets needs zarr-python 2 and NumPy 2, so fixtures and the
reference run in their own environment (.venv-anemoi from python/requirements-anemoi.txt, or the
python named by $CHUTE_ANEMOI_PYTHON)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES, REPO

import chute

ANEMOI_PYTHON = Path(
    os.environ.get("CHUTE_ANEMOI_PYTHON", REPO / ".venv-anemoi" / "bin" / "python")
)
pytestmark = pytest.mark.skipif(
    not ANEMOI_PYTHON.exists()
    or subprocess.run([str(ANEMOI_PYTHON), "-c", "import anemoi.datasets"], capture_output=True,
                      check=False).returncode != 0,
    reason=f"anemoi-datasets is not installed at {ANEMOI_PYTHON} "
    "(create .venv-anemoi from python/requirements-anemoi.txt)",
)  # fmt: skip


@pytest.fixture(scope="session")
def stores(tmp_path_factory) -> dict[str, Path]:
    outdir = tmp_path_factory.mktemp("anemoi")
    result = subprocess.run(
        [str(ANEMOI_PYTHON), str(FIXTURES / "anemoi_oracle.py"), "write", str(outdir)],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        pytest.fail(f"anemoi_oracle.py write failed:\n{result.stdout}\n{result.stderr}")
    names = json.loads((outdir / "stores.json").read_text())
    out = {key: outdir / name for key, name in names.items()}
    out["_dir"] = outdir
    return out


def _spec(spec, stores):
    """A case's dataset spec with store keys replaced by paths."""
    if isinstance(spec, str):
        return str(stores[spec])
    if isinstance(spec, list):
        return [_spec(s, stores) for s in spec]
    return {
        k: (_spec(v, stores) if k in ("dataset", "concat", "join") else v) for k, v in spec.items()
    }


CASES = [
    {"id": "plain", "open": {"dataset": "a"}, "multistep": 2, "rollout": 1, "timeincrement": 1},
    {"id": "select", "open": {"dataset": "a", "select": ["msl", "2t", "lsm"]}, "multistep": 3,
     "rollout": 2, "timeincrement": 1},
    {"id": "drop", "open": {"dataset": "a", "drop": ["lsm", "10v"]}, "multistep": 1, "rollout": 1,
     "timeincrement": 1},
    {"id": "dates", "open": {"dataset": "a", "start": "2020-01-02", "end": "2020-01-05T12:00:00"},
     "multistep": 2, "rollout": 1, "timeincrement": 2},
    {"id": "frequency", "open": {"dataset": "a", "frequency": "12h"}, "multistep": 2,
     "rollout": 2, "timeincrement": 1},
    {"id": "frequency_dates", "open": {"dataset": "a", "start": "2020-01-01T06:00:00",
     "frequency": "12h", "select": ["z_500", "10u"]}, "multistep": 2, "rollout": 1,
     "timeincrement": 1},
    {"id": "concat", "open": {"concat": ["a", "b"]}, "multistep": 2, "rollout": 1,
     "timeincrement": 1},
    {"id": "join", "open": {"join": ["a", "c"]}, "multistep": 2, "rollout": 1, "timeincrement": 1},
    {"id": "join_select", "open": {"join": ["c", "a"], "select": ["tp", "msl", "2t"]},
     "multistep": 1, "rollout": 3, "timeincrement": 1},
    {"id": "single_member", "open": {"dataset": "single"}, "multistep": 2, "rollout": 2,
     "timeincrement": 3},
    {"id": "members", "open": {"dataset": "a", "members": [2, 0]}, "multistep": 2, "rollout": 1,
     "timeincrement": 1},
    {"id": "created", "open": {"dataset": "created"}, "multistep": 2, "rollout": 1,
     "timeincrement": 1},
]  # fmt: skip


@pytest.fixture(scope="session")
def oracle(stores) -> dict:
    cases = []
    for case in CASES:
        if case["id"] == "created" and "created" not in stores:
            continue
        cases.append({**case, "open": _spec(case["open"], stores)})
    outdir = stores["_dir"]
    (outdir / "cases.json").write_text(json.dumps(cases))
    result = subprocess.run(
        [str(ANEMOI_PYTHON), str(FIXTURES / "anemoi_oracle.py"), "oracle",
         str(outdir / "cases.json"), str(outdir / "oracle.npz")],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        pytest.fail(f"anemoi_oracle.py oracle failed:\n{result.stdout}\n{result.stderr}")
    with np.load(outdir / "oracle.npz") as z:
        return {key: z[key] for key in z.files}


def _open(case, stores, **options):
    spec = _spec(case["open"], stores)
    return chute.anemoi(
        spec,
        multistep_input=case["multistep"],
        rollout=case["rollout"],
        timeincrement=case["timeincrement"],
        **options,
    )


def _all_samples(ds, **loader_options):
    """Every sample of `ds` in order: (inputs, targets, indices)."""
    loader = chute.Loader(ds, batch_size=len(ds), shuffle=False, **loader_options)
    (batch,) = list(loader)
    targets = batch["targets"].copy() if "targets" in batch else None
    return batch["inputs"].copy(), targets, batch.indices.copy()


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_samples_equal_anemoi_datasets(case, stores, oracle):
    if case["id"] == "created" and "created" not in stores:
        reason = (stores["_dir"] / "created.error").read_text()[-500:]
        pytest.skip(f"anemoi-datasets create failed here: {reason}")
    cid = case["id"]
    ds = _open(case, stores, normalise="none")
    ms = case["multistep"]
    windows = oracle[f"{cid}/windows"]
    assert len(ds) == len(windows)
    np.testing.assert_array_equal(ds.sample_date_indices(), oracle[f"{cid}/valid"])
    inputs, targets, _ = _all_samples(ds)
    np.testing.assert_array_equal(inputs, windows[:, :ms])
    np.testing.assert_array_equal(targets, windows[:, ms:])
    # The metadata anemoi-datasets gives.
    assert ds.variables == list(oracle[f"{cid}/variables"])
    assert ds.name_to_index == json.loads(str(oracle[f"{cid}/name_to_index"]))
    np.testing.assert_array_equal(ds.dates.astype(np.int64), oracle[f"{cid}/dates"])
    assert sorted(ds.missing) == oracle[f"{cid}/missing"].tolist()
    np.testing.assert_array_equal(ds.latitudes, oracle[f"{cid}/latitudes"])
    np.testing.assert_array_equal(ds.longitudes, oracle[f"{cid}/longitudes"])
    assert int(ds.frequency / np.timedelta64(1, "s")) == int(oracle[f"{cid}/frequency_s"])
    for name in ("mean", "stdev", "minimum", "maximum"):
        np.testing.assert_array_equal(ds.statistics[name], oracle[f"{cid}/statistics/{name}"])
    # Missing dates are never inside a sampled window.
    span = np.arange(-(ms - 1), case["rollout"] + 1) * case["timeincrement"]
    for i in ds.sample_date_indices():
        assert not (set((i + span).tolist()) & ds.missing)


def _factors(stats, variables, methods):
    mul = np.ones(len(variables), np.float32)
    add = np.zeros(len(variables), np.float32)
    for i, name in enumerate(variables):
        method = methods.get(name, methods.get("default", "mean-std"))
        if method == "mean-std":
            mul[i] = 1 / stats["stdev"][i]
            add[i] = -stats["mean"][i] / stats["stdev"][i]
        elif method == "min-max":
            x = stats["maximum"][i] - stats["minimum"][i]
            mul[i], add[i] = 1 / x, -stats["minimum"][i] / x
        elif method == "std":
            mul[i] = 1 / stats["stdev"][i]
        elif method == "max":
            mul[i] = 1 / stats["maximum"][i]
    return mul, add


@pytest.mark.parametrize(
    "normalise",
    ["mean-std", "min-max", "std", "max", {"default": "mean-std", "lsm": "none"},
     {"default": "min-max", "none": ["2t"], "std": ["msl"]}],
)  # fmt: skip
def test_normalisation_as_anemoi_training(normalise, stores, oracle):
    case = CASES[1]  # select: msl, 2t, lsm
    ds = _open(case, stores, normalise=normalise)
    stats = {k: oracle[f"select/statistics/{k}"] for k in ("mean", "stdev", "minimum", "maximum")}
    methods = dict(normalise) if isinstance(normalise, dict) else {"default": normalise}
    for method in ("none", "std", "min-max", "max", "mean-std"):
        for name in methods.pop(method, []) if isinstance(methods.get(method), list) else []:
            methods[name] = method
    mul, add = _factors(stats, ds.variables, methods)
    windows = oracle["select/windows"]
    expected = windows * mul + add
    inputs, targets, _ = _all_samples(ds)
    np.testing.assert_allclose(inputs, expected[:, :3], rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(targets, expected[:, 3:], rtol=2e-6, atol=2e-6)


def test_variables_first_bfloat16_and_variable_roles(stores, oracle):
    import ml_dtypes

    case = CASES[0]
    windows = oracle["plain/windows"]  # (sample, step, member, cell, variable)
    names = list(oracle["plain/variables"])
    ds = _open(case, stores, normalise="none", variables_first=True)
    inputs, targets, _ = _all_samples(ds)
    np.testing.assert_array_equal(inputs, np.moveaxis(windows[:, :2], -1, 2))
    np.testing.assert_array_equal(targets, np.moveaxis(windows[:, 2:], -1, 2))

    ds = _open(case, stores, normalise="none", dtype="bfloat16")
    inputs, targets, _ = _all_samples(ds)
    assert inputs.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(
        inputs.view(np.uint16), windows[:, :2].astype(ml_dtypes.bfloat16).view(np.uint16)
    )

    # anemoi-training: inputs are prognostic + forcing, targets prognostic + diagnostic.
    ds = _open(case, stores, normalise="none", forcing=["lsm"], diagnostic=["msl"])
    assert ds.input_variables == [n for n in names if n != "msl"]
    assert ds.target_variables == [n for n in names if n != "lsm"]
    inputs, targets, _ = _all_samples(ds)
    np.testing.assert_array_equal(
        inputs, windows[:, :2][..., [names.index(n) for n in ds.input_variables]]
    )
    np.testing.assert_array_equal(
        targets, windows[:, 2:][..., [names.index(n) for n in ds.target_variables]]
    )

    # Chosen by name, in the order given.
    ds = _open(
        case, stores, normalise="none", input_variables=["msl", "2t"], target_variables=["lsm"]
    )
    inputs, targets, _ = _all_samples(ds)
    np.testing.assert_array_equal(
        inputs, windows[:, :2][..., [names.index("msl"), names.index("2t")]]
    )
    np.testing.assert_array_equal(targets, windows[:, 2:][..., [names.index("lsm")]])


def test_ensemble_members(stores, oracle):
    case = CASES[0]
    windows = oracle["plain/windows"]
    for members, chosen in (({"members": [2, 0]}, [0, 2]), ({"numbers": [2]}, [1]),
                            ({"members": [0, 1, 2, 1]}, [0, 1, 2])):  # fmt: skip
        ds = _open(case, stores, normalise="none", **members)
        assert ds.ensemble_members == chosen
        inputs, targets, _ = _all_samples(ds)
        np.testing.assert_array_equal(inputs, windows[:, :2][:, :, chosen])
        np.testing.assert_array_equal(targets, windows[:, 2:][:, :, chosen])


def test_reader_groups_and_ranks_split_disjoint_and_covering(stores, oracle):
    case = CASES[0]
    windows = oracle["plain/windows"]
    n = 3
    parts = []
    for i in range(n):
        ds = _open(case, stores, normalise="none", reader_group=(i, n))
        lo, hi = ds.cell_range
        parts.append((lo, hi))
        inputs, _, _ = _all_samples(ds)
        np.testing.assert_array_equal(inputs, windows[:, :2, :, lo:hi])
    assert parts[0][0] == 0 and parts[-1][1] == windows.shape[3]
    assert all(parts[i][1] == parts[i + 1][0] for i in range(n - 1))
    # Ranks of the Loader (model instances) get disjoint samples covering the epoch, and the
    # readers of one group get the same samples.
    ds = _open(case, stores, normalise="none", reader_group=(1, 2))
    seen = []
    for rank in range(2):
        loader = chute.Loader(ds, batch_size=2, shuffle=True, seed=3, rank=rank, world_size=2,
                              drop_last=True)  # fmt: skip
        indices = [i for b in loader for i in b.indices.tolist()]
        other = chute.Loader(_open(case, stores, normalise="none", reader_group=(0, 2)),
                             batch_size=2, shuffle=True, seed=3, rank=rank, world_size=2,
                             drop_last=True)  # fmt: skip
        assert indices == [i for b in other for i in b.indices.tolist()]
        seen.append(set(indices))
    assert not seen[0] & seen[1]
    assert len(seen[0] | seen[1]) == 2 * (len(ds) // 4) * 2


def _copy_to_v3(src: Path, dst: Path) -> None:
    import zarr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source = zarr.open_group(str(src), mode="r")
        target = zarr.open_group(str(dst), mode="w", zarr_format=3)
        target.attrs.update(dict(source.attrs))
        for name, array in source.arrays():
            target.create_array(name, data=array[:], chunks=array.chunks)


def test_zarr_v3_store_reads_the_same(stores, tmp_path):
    _copy_to_v3(stores["a"], tmp_path / "a3.zarr")
    case = CASES[1]
    v2 = _open(case, stores, normalise="mean-std")
    v3 = chute.anemoi(str(tmp_path / "a3.zarr"), select=case["open"]["select"], multistep_input=3,
                      rollout=2, normalise="mean-std")  # fmt: skip
    a, b = _all_samples(v2), _all_samples(v3)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert v3.dates.dtype == np.dtype("datetime64[s]")


def test_torch_adapter_resumes(stores):
    torch = pytest.importorskip("torch")
    from chute.torch import ChuteIterableDataset

    ds = _open(CASES[0], stores, normalise="mean-std")
    adapter = ChuteIterableDataset(ds, batch_size=2, shuffle=True, seed=5)
    batches = list(adapter)
    assert batches[0]["inputs"].shape == (2, 2, 3, 37, 6)
    assert batches[0]["inputs"].dtype == torch.float32
    resumed = ChuteIterableDataset(ds, batch_size=2, shuffle=True, seed=5)
    it = iter(resumed)
    next(it), next(it)
    state = resumed.state_dict()
    again = ChuteIterableDataset(ds, batch_size=2, shuffle=True, seed=5)
    again.load_state_dict(state)
    rest = list(again)
    assert len(rest) == len(batches) - 2
    for x, y in zip(rest, batches[2:]):
        assert torch.equal(x["inputs"], y["inputs"]) and torch.equal(x["targets"], y["targets"])


def _broken_copy(stores, tmp_path, edit) -> str:
    path = tmp_path / "broken.zarr"
    shutil.copytree(stores["a"], path)
    (path / ".zmetadata").unlink(missing_ok=True)  # the attributes are read from .zattrs
    attrs = json.loads((path / ".zattrs").read_text())
    edit(attrs, path)
    (path / ".zattrs").write_text(json.dumps(attrs))
    return str(path)


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda a, p: a.pop("variables"), ["'variables'", "missing"]),
        (lambda a, p: a.update(variables=a["variables"][:-1]), ["'variables'", "names 5"]),
        (lambda a, p: a.update(variables=["x"] * 6), ["'variables'", "twice"]),
        (lambda a, p: a.update(name_to_index={"2t": 3}), ["'name_to_index'"]),
        (lambda a, p: a.update(frequency="often"), ["'frequency'", "often"]),
        (lambda a, p: a.update(frequency="12h"), ["array 'dates'", "not regular"]),
        (lambda a, p: a.update(missing_dates=["1999-01-01T00:00:00"]), ["'missing_dates'", "1999"]),
        (lambda a, p: a.update(start_date="2019-01-01T00:00:00"), ["'start_date'", "2019"]),
        (lambda a, p: a.update(ensemble_dimension=1), ["'ensemble_dimension'"]),
        (lambda a, p: shutil.rmtree(p / "data"), ["array 'data'", "missing"]),
    ],
)
def test_bad_attributes_name_dataset_and_attribute(stores, tmp_path, edit, words):
    path = _broken_copy(stores, tmp_path, edit)
    with pytest.raises(chute.Error) as error:
        chute.anemoi(path)
    message = str(error.value)
    assert "broken.zarr" in message, message
    for word in words:
        assert word in message, message


def test_bad_options_are_named(stores):
    a = str(stores["a"])
    for options, words in [
        ({"select": ["nope"]}, ["select", "nope"]),
        ({"frequency": "5h"}, ["frequency", "multiple"]),
        ({"members": [3]}, ["members", "3"]),
        ({"normalise": "z-score"}, ["normalise", "z-score"]),
        ({"normalise": {"default": "none", "nope": "none"}}, ["normalise", "nope"]),
        ({"multistep_input": 0}, ["multistep_input"]),
        ({"start": "2030-01-01"}, ["start"]),
        ({"reader_group": (2, 2)}, ["reader_group"]),
        ({"timeincrement": "5h"}, ["timeincrement"]),
        ({"multistep_input": 30}, ["no sample fits"]),
    ]:
        with pytest.raises(chute.Error) as error:
            chute.anemoi(a, **options)
        for word in words:
            assert word in str(error.value), (options, str(error.value))
    b, c = str(stores["b"]), str(stores["c"])
    for spec, words in [
        ({"concat": [a, c]}, ["concat", "variables"]),
        ({"concat": [b, a]}, ["concat", "not after"]),
        ({"join": [a, b]}, ["join", "different dates"]),
        ({"join": [a, {"dataset": c, "members": [0]}]}, ["join", "ensemble members"]),
        ({"dataset": a, "area": [1, 2, 3, 4]}, ["unknown dataset option", "area"]),
    ]:
        with pytest.raises(chute.Error) as error:
            chute.anemoi(spec)
        for word in words:
            assert word in str(error.value), (spec, str(error.value))


def test_over_http_equals_local(stores):
    from http_servers import StaticServer

    server = StaticServer(stores["_dir"])
    try:
        case = CASES[7]  # join of a and c
        local = _open(case, stores, normalise="mean-std")
        remote = chute.anemoi(
            {"join": [f"{server.url}/a.zarr", f"{server.url}/c.zarr"]},
            multistep_input=case["multistep"],
            rollout=case["rollout"],
        )
        assert remote.variables == local.variables
        np.testing.assert_array_equal(remote.dates, local.dates)
        a, b = _all_samples(local), _all_samples(remote)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    finally:
        server.stop()
