"""The RL agents' shared pieces: config-to-CLI, environments, networks and parameter blobs,
n-step transitions and their item format, logging, phase timing and checkpoints."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from host_agents.cli import ConfigError, add_config_args, config_from_args, field_docs, run_main
from host_agents.envs import env_info, make_env
from host_agents.experience import NStepAccumulator, Transition, decode_transitions, encode_transition
from host_agents.metrics import (
    PhaseTimer,
    RunLogger,
    communication_share,
    load_checkpoint,
    read_metrics,
    save_checkpoint,
)
from host_agents.netutil import free_port
from host_agents.networks import (
    ActorCritic,
    DuelingQNetwork,
    flat_gradients,
    flat_params,
    load_flat_gradients,
    load_flat_params,
    params_from_bytes,
    params_to_bytes,
    select_device,
)
from host_agents.param_store import ParamStore
from host_agents.replay_client import HostReplayClient, ReplayConfig
from host_agents.run_config import RunConfig, evaluate
from topologies.replay_server import SERVER_BIN, ReplayServerProcess


@dataclass
class _Demo(RunConfig):
    """A config with one field of each kind."""

    lr: float = 1e-3
    """learning rate of the demo"""
    hidden: int | None = None
    """hidden units (None: automatic)"""
    dueling: bool = True
    """use the dueling head"""


# ---- cli ----


def test_field_docs_include_the_base_class_fields() -> None:
    docs = field_docs(_Demo)
    assert docs["lr"] == "learning rate of the demo"
    assert docs["env"].startswith("Gymnasium environment id")


def test_flags_round_trip_every_kind_of_field() -> None:
    parser = argparse.ArgumentParser()
    add_config_args(parser, _Demo)
    args = parser.parse_args(["--lr", "0.5", "--hidden", "none", "--no-dueling", "--max-steps", "7"])
    cfg = config_from_args(_Demo, args)
    assert (cfg.lr, cfg.hidden, cfg.dueling, cfg.max_steps) == (0.5, None, False, 7)
    assert "learning rate of the demo" in parser.format_help()
    cfg = config_from_args(_Demo, parser.parse_args(["--hidden", "32"]))
    assert cfg.hidden == 32 and cfg.dueling is True


def test_bad_flag_values_are_config_errors() -> None:
    parser = argparse.ArgumentParser()
    add_config_args(parser, _Demo)
    with pytest.raises(ConfigError, match="run_name"):
        config_from_args(_Demo, parser.parse_args(["--run-name", "a/b"]))
    with pytest.raises(SystemExit):
        parser.parse_args(["--lr", "fast"])


def test_run_main_turns_user_errors_into_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def bad() -> int:
        raise ConfigError("batch 64 is larger than the replay (32)")

    assert run_main("prog", bad) == 2
    err = capsys.readouterr().err
    assert err.strip().startswith("prog: configuration error: batch 64 is larger than the replay (32)")
    assert len(err.strip().splitlines()) == 1

    def unreachable() -> int:
        raise TimeoutError("no reply from 10.0.0.1:47100")

    assert run_main("prog", unreachable) == 1

    def bug() -> int:
        raise KeyError("a bug is not a user error")

    with pytest.raises(KeyError):
        run_main("prog", bug)


# ---- environments ----


def test_unknown_environment_names_a_close_match() -> None:
    with pytest.raises(ConfigError, match="CartPole-v1"):
        make_env("CartPol-v1")


def test_cartpole_and_breakout_shapes() -> None:
    cp = env_info("CartPole-v1")
    assert cp.obs_shape == (4,) and cp.num_actions == 2 and not cp.atari
    br = env_info("ALE/Breakout-v5")
    assert br.obs_shape == (4, 84, 84) and br.obs_dtype == np.uint8 and br.atari


def test_breakout_presses_fire_so_the_ball_moves() -> None:
    """Without FIRE after reset, NOOPs alone leave Breakout's frames unchanged."""
    env = make_env("ALE/Breakout-v5", seed=3)
    obs, _ = env.reset(seed=3)
    frames = [obs[-1].copy()]
    for _ in range(15):
        obs, *_ = env.step(0)
        frames.append(obs[-1].copy())
    env.close()
    assert any(not np.array_equal(frames[0], f) for f in frames[1:])


def test_evaluate_is_seeded() -> None:
    def act(obs: np.ndarray) -> int:
        return int(obs[2] > 0)

    a = evaluate(act, "CartPole-v1", 3, seed=5)
    assert a == evaluate(act, "CartPole-v1", 3, seed=5)
    assert len(a) == 3 and all(r >= 1 for r in a)


# ---- networks and parameter blobs ----


def test_nature_dueling_network_is_about_13_megabytes() -> None:
    q = DuelingQNetwork((4, 84, 84), 4)
    nbytes = 4 * sum(p.numel() for p in q.parameters())
    assert 12e6 < nbytes < 14e6
    out = q(torch.zeros(2, 4, 84, 84, dtype=torch.uint8))
    assert out.shape == (2, 4)


def test_dueling_head_centres_the_advantages() -> None:
    torch.manual_seed(0)
    q = DuelingQNetwork((4,), 3, hidden=16)
    x = torch.randn(5, 4)
    h = q.torso(x)
    assert torch.allclose(q(x).mean(dim=1), q.value(h).squeeze(1), atol=1e-6)


def test_params_blob_round_trip_and_refusals() -> None:
    torch.manual_seed(1)
    a, b = ActorCritic((4,), 2), ActorCritic((4,), 2)
    blob = params_to_bytes(a)
    load_flat_params(b, params_from_bytes(blob))
    assert np.array_equal(flat_params(a), flat_params(b))
    corrupt = bytearray(blob)
    corrupt[-1] ^= 1
    with pytest.raises(ValueError, match="crc32"):
        params_from_bytes(bytes(corrupt))
    with pytest.raises(ValueError, match="magic"):
        params_from_bytes(b"XXXX" + blob[4:])
    with pytest.raises(ValueError, match="values"):
        load_flat_params(DuelingQNetwork((4,), 2), params_from_bytes(blob))


def test_flat_gradients_round_trip() -> None:
    torch.manual_seed(2)
    net = ActorCritic((4,), 2, hidden=8)
    logits, values = net(torch.randn(3, 4))
    (logits.sum() + values.sum()).backward()
    g = flat_gradients(net)
    assert g.numel() == sum(p.numel() for p in net.parameters())
    load_flat_gradients(net, g * 2)
    assert torch.allclose(flat_gradients(net), g * 2)


# ---- n-step transitions ----


def _obs(i: float) -> np.ndarray:
    return np.full(2, i, np.float32)


def test_n_step_returns_and_discounts() -> None:
    acc = NStepAccumulator(n=3, gamma=0.5)
    out = []
    for t in range(4):
        out += acc.add(_obs(t), t, reward=1.0 + t, next_obs=_obs(t + 1), terminated=False, truncated=False)
    # the first transition completes at step 2: R = 1 + .5*2 + .25*3, bootstrap from s_3
    assert len(out) == 2
    assert out[0].ret == pytest.approx(1 + 0.5 * 2 + 0.25 * 3)
    assert out[0].discount == pytest.approx(0.125)
    assert out[0].next_obs[0] == 3 and out[0].action == 0
    assert out[1].ret == pytest.approx(2 + 0.5 * 3 + 0.25 * 4)
    # termination flushes the rest with discount 0
    out = acc.add(_obs(4), 4, reward=10.0, next_obs=_obs(5), terminated=True, truncated=False)
    assert [t.action for t in out] == [2, 3, 4]
    assert out[0].ret == pytest.approx(3 + 0.5 * 4 + 0.25 * 10) and out[0].discount == 0.0
    assert out[2].ret == pytest.approx(10.0)
    assert len(acc) == 0


def test_truncation_bootstraps_with_the_steps_taken() -> None:
    acc = NStepAccumulator(n=3, gamma=0.9)
    acc.add(_obs(0), 0, 1.0, _obs(1), False, False)
    out = acc.add(_obs(1), 1, 1.0, _obs(2), False, True)
    assert [t.discount for t in out] == pytest.approx([0.81, 0.9])
    assert all(t.next_obs[0] == 2 for t in out)


@pytest.mark.parametrize("compress", [False, True])
def test_transition_items_round_trip(compress: bool) -> None:
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 255, (4, 84, 84), dtype=np.uint8) for _ in range(6)]
    items = [
        encode_transition(Transition(frames[i], i, 0.5 * i, frames[i + 1], 0.99), compress) for i in range(5)
    ]
    batch = decode_transitions(items, (4, 84, 84), np.uint8)
    assert np.array_equal(batch.obs[3], frames[3]) and np.array_equal(batch.next_obs[3], frames[4])
    assert batch.actions.tolist() == [0, 1, 2, 3, 4]
    assert batch.returns[2] == pytest.approx(1.0) and batch.discounts[4] == pytest.approx(0.99)


def test_uniform_batches_decode_as_one_array_like_the_item_loop() -> None:
    """A batch of uncompressed same-size items takes the array path; one compressed item sends
    the batch through the per-item loop; both give the same arrays, and a foreign item in a
    same-size batch still gets the loop's error with its index."""
    rng = np.random.default_rng(5)
    def obs() -> np.ndarray:
        return rng.standard_normal(3).astype(np.float32)

    ts = [Transition(obs(), int(rng.integers(7)), float(rng.standard_normal()), obs(), float(rng.random()))
          for _ in range(64)]  # fmt: skip
    plain = [encode_transition(t) for t in ts]
    mixed = plain[:-1] + [encode_transition(ts[-1], compress=True)]
    assert len(mixed[-1]) != len(plain[-1])
    a, b = decode_transitions(plain, (3,), np.float32), decode_transitions(mixed, (3,), np.float32)
    for f in ("obs", "actions", "returns", "next_obs", "discounts"):
        assert getattr(a, f).dtype == getattr(b, f).dtype and np.array_equal(getattr(a, f), getattr(b, f)), f
    assert a.actions.tolist() == [t.action for t in ts]
    foreign = list(plain)
    foreign[9] = b"\0" * len(plain[9])
    with pytest.raises(ValueError, match="item 9: not a transition"):
        decode_transitions(foreign, (3,), np.float32)


def test_foreign_items_are_refused_with_their_index() -> None:
    good = encode_transition(Transition(_obs(0), 1, 1.0, _obs(1), 0.9))
    with pytest.raises(ValueError, match="item 1: not a transition"):
        decode_transitions([good, b"\0" * 40], (2,), np.float32)
    with pytest.raises(ValueError, match="item 0: body"):
        decode_transitions([good], (3,), np.float32)
    with pytest.raises(ValueError, match="shorter"):
        decode_transitions([b"abc"], (2,), np.float32)


# ---- logging, timing, checkpoints ----


def test_run_logger_writes_tensorboard_and_jsonl(tmp_path) -> None:
    with RunLogger(tmp_path / "r") as log:
        log.scalar("episode/return", 12.5, 3)
        log.scalars({"a": 1, "b": 2}, 4, prefix="time/")
        log.write_json("summary.json", {"x": 1})
    assert read_metrics(tmp_path / "r") == {
        "episode/return": [(3, 12.5)],
        "time/a": [(4, 1.0)],
        "time/b": [(4, 2.0)],
    }
    assert list((tmp_path / "r").glob("events.out.tfevents.*"))
    assert json.loads((tmp_path / "r" / "summary.json").read_text()) == {"x": 1}


def test_phase_timer_phases_add_up_to_elapsed() -> None:
    t0 = time.perf_counter()
    timer = PhaseTimer()
    with timer.phase("pull_params"):
        time.sleep(0.02)
    with timer.phase("evaluate"):
        time.sleep(0.01)
    sum(range(20000))
    split = timer.interval()
    elapsed = time.perf_counter() - t0
    assert set(split) == {"pull_params", "evaluate", "computation"}
    assert split["pull_params"] >= 0.02 and split["evaluate"] >= 0.01
    assert sum(split.values()) == pytest.approx(elapsed, abs=0.005)
    assert timer.interval().get("pull_params") is None  # the interval restarted
    assert sum(timer.totals().values()) >= sum(split.values())


def test_communication_share_leaves_evaluation_out() -> None:
    split = {"computation": 1.0, "sample": 2.0, "set_params": 1.0, "evaluate": 4.0}
    assert communication_share(split) == pytest.approx(0.75)
    assert communication_share(split, ["sample"]) == pytest.approx(2 / 3)
    assert communication_share({"computation": 0.0}) == 0.0


def test_a_fresh_run_starts_a_fresh_metrics_file_and_a_resumed_one_appends(tmp_path) -> None:
    with RunLogger(tmp_path, tensorboard=False) as log:
        log.scalar("a", 1, 0)
    with RunLogger(tmp_path, tensorboard=False, resume=True) as log:
        log.scalar("a", 2, 1)
    assert read_metrics(tmp_path)["a"] == [(0, 1.0), (1, 2.0)]
    with RunLogger(tmp_path, tensorboard=False) as log:
        log.scalar("a", 3, 0)
    assert read_metrics(tmp_path)["a"] == [(0, 3.0)]


def test_checkpoint_is_atomic_and_loads(tmp_path) -> None:
    path = save_checkpoint(tmp_path / "c" / "checkpoint.pt", {"updates": 5, "w": torch.ones(3)})
    assert not list(path.parent.glob("*.tmp"))
    state = load_checkpoint(path)
    assert state["updates"] == 5 and torch.equal(state["w"], torch.ones(3))
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "missing.pt")


@pytest.mark.parametrize("module", ["host_agents.actor", "host_agents.learner", "host_agents.worker"])
def test_entry_point_help_and_bad_device(module: str) -> None:
    """--help works (every field docstring is valid help text), and a device torch does not know
    is one configuration-error line, exit 2, before anything is started."""
    run = [sys.executable, "-m", module]
    # both at once: each process spends ~2 s importing torch
    procs = [subprocess.Popen([*run, *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for flags in (["--help"], ["--device", "gpu"])]  # fmt: skip
    (help_out, help_err), (_, bad_err) = (p.communicate(timeout=60) for p in procs)
    assert procs[0].returncode == 0, help_err
    assert "--device" in help_out and "--env" in help_out
    assert procs[1].returncode == 2, bad_err
    assert "Traceback" not in bad_err and "unknown device 'gpu'" in bad_err


def test_select_device() -> None:
    assert select_device("cpu").type == "cpu"
    assert select_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ConfigError, match="unknown device"):
        select_device("gpu")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="no CUDA"):
            select_device("cuda")


# ---- parameter store ----


@pytest.mark.skipif(not SERVER_BIN.exists(), reason="replay server not built (make replay-server)")
def test_param_store_refuses_an_older_publisher_and_another_network() -> None:
    port = free_port("udp")
    cfg = ReplayConfig(server_port=port, max_size=16, timeout_s=0.1)
    args = ["--bind", "127.0.0.1", "--port", str(port), "--table", "t:max_size=16", "--quiet"]
    with (
        ReplayServerProcess(args),
        HostReplayClient(cfg) as pub_client,
        HostReplayClient(cfg) as sub_client,
    ):
        torch.manual_seed(0)
        learner, actor = DuelingQNetwork((4,), 2, 8), DuelingQNetwork((4,), 2, 8)
        publisher, puller = ParamStore(pub_client), ParamStore(sub_client)
        assert not puller.pull(actor)  # nothing published yet
        publisher.publish(learner, 30)
        assert puller.pull(actor) and np.array_equal(flat_params(actor), flat_params(learner))
        assert not puller.pull(actor)  # same version: nothing new
        torch.manual_seed(1)
        with pytest.raises(ConfigError, match="already holds version 30"):
            ParamStore(pub_client).publish(DuelingQNetwork((4,), 2, 8), 1)  # a restart without --resume
        assert not puller.pull(actor)  # the refused publication changed nothing
        publisher.publish(DuelingQNetwork((4,), 2, 16), 31)
        with pytest.raises(ConfigError, match="same --env and --hidden"):
            puller.pull(actor)


def test_fire_after_a_lost_life_lets_noop_play_lose_the_game() -> None:
    """Breakout waits for FIRE after each lost life: with it, NOOP play loses all five lives in a
    few hundred steps; without it the game would sit still until the time limit."""
    env = make_env("ALE/Breakout-v5", seed=0, max_episode_steps=2000)
    env.reset(seed=0)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        _, _, terminated, truncated, info = env.step(0)
        steps += 1
    env.close()
    assert terminated and not truncated and info["lives"] == 0 and steps < 1000


def test_atari_games_without_fire_are_supported() -> None:
    env = make_env("ALE/MsPacman-v5", seed=0)
    obs, _ = env.reset(seed=0)
    env.close()
    assert obs.shape == (4, 84, 84)


def test_atari_time_limit_counts_agent_steps() -> None:
    env = make_env("ALE/Breakout-v5", seed=0, max_episode_steps=50)
    env.reset(seed=0)
    steps, done = 0, False
    while not done:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        done = terminated or truncated
    env.close()
    assert steps <= 50 and (steps == 50 or terminated)


def test_greedy_policy_picks_the_networks_argmax() -> None:
    """GreedyPolicy (NumPy for MLP networks) picks torch's argmax Q for observations of random
    networks, and follows new parameters only after refresh()."""
    from host_agents.networks import DuelingQNetwork, GreedyPolicy, flat_params, load_flat_params

    rng = np.random.default_rng(4)
    for obs_dim, actions, hidden in ((4, 2, 64), (8, 5, 32)):
        torch.manual_seed(obs_dim)
        net = DuelingQNetwork((obs_dim,), actions, hidden)
        policy = GreedyPolicy(net)
        obs = rng.standard_normal((500, obs_dim)).astype(np.float32)

        def torch_argmax(net: DuelingQNetwork = net, obs: np.ndarray = obs) -> list[int]:
            with torch.no_grad():
                return net(torch.from_numpy(obs)).argmax(dim=1).tolist()

        before = torch_argmax()
        assert [policy.act(o) for o in obs] == before
        load_flat_params(net, flat_params(net) * -1.0)  # other parameters, other choices
        after = torch_argmax()
        assert after != before
        assert [policy.act(o) for o in obs] == before  # not refreshed yet
        policy.refresh()
        assert [policy.act(o) for o in obs] == after
