"""`python -m normkit bench --model`: tiny models through the command line, loss agreement, options, files.

Timings are printed but never checked; the losses are: every variant trains from the same weights on the
same batches, so normkit's rows must stay within the tolerance the table prints.
"""

import csv
import json
import re
import sys
import types

import pytest
import torch

from normkit.bench import model, model_cli, model_profile, output
from tests.test_cli import _run  # (exit status, stdout, stderr) of `python -m normkit ARGV`, in-process

transformers = pytest.importorskip("transformers")

TINY = ["--layers", "2", "--hidden", "64", "--seq", "32", "--batch", "1", "--vocab", "1024", "--steps", "2",
        "--warmup", "1", "--modes", "eager"]


@pytest.mark.parametrize("name, variants", [("llama", "stock,patched,fused"), ("qwen3", "stock,patched,fused"),
                                            ("qwen3-next", "stock,patched")])
def test_a_tiny_model_trains_like_stock_through_the_command_line(name, variants, tmp_path, capsys):
    path = tmp_path / "rows.json"
    status, out, err = _run(["bench", "--model", name, *TINY, "--variants", variants, "--json", str(path)], capsys)
    assert status == 0, err
    report = json.loads(path.read_text())
    env, rows = report["environment"], report["results"]
    assert [(r["impl"], r["mode"]) for r in rows] == [(v, "eager") for v in variants.split(",")]
    stock = rows[0]["losses"]
    assert len(stock) == 3 and all(5.0 < loss < 9.0 for loss in stock)  # ln(1024) ≈ 6.9 from random weights
    for r in rows[1:]:
        worst = max(abs(a - b) / abs(b) for a, b in zip(r["losses"], stock))
        assert r["loss_rel_diff"] == pytest.approx(worst) and worst <= env["loss_rtol"] and r["loss_ok"]
        assert r["step_p20_s"] <= r["step_s"] <= r["step_p80_s"] and "Norm" in r["note"]
    for variant in variants.split(","):
        assert any(line.split()[:2] == [variant, "eager"] for line in out.splitlines()), out
    assert f"✗ beyond {env['loss_rtol']:g}" in out and env["config"]["hidden_size"] == 64
    assert f"{env['config_class']}, 2 layers, hidden 64" in out and "Order: interleaved" in out


def test_interleaved_rounds_train_each_variant_as_the_sequential_order_does(monkeypatch):
    build_config = model.build_config

    def with_dropout(settings):  # these configs have none; dropout shows whether each variant's draws stay its own
        config = build_config(settings)
        config.attention_dropout = 0.5
        return config

    settings = dict(variants=("stock", "patched", "fused"), modes=("eager",), layers=1, hidden=64, seq=16, batch=1,
                    vocab=256, steps=3, warmup=1, dtype="fp32")
    without = model.run(model.Settings(**{**settings, "variants": ("stock",)}), torch.device("cpu"), quiet=True)[0]
    monkeypatch.setattr(model, "build_config", with_dropout)
    interleaved, _ = model.run(model.Settings(**settings), torch.device("cpu"), quiet=True)
    sequential, env = model.run(model.Settings(**settings, sequential=True), torch.device("cpu"), quiet=True)
    assert "Order: sequential: one variant's timed steps after another's" in model_cli.method(env)
    assert interleaved[0]["losses"] != without[0]["losses"]  # the dropout draws count
    for a, b in zip(interleaved, sequential):
        assert a["impl"] == b["impl"] and a["losses"] == b["losses"] and len(a["times_s"]) == len(b["times_s"]) == 3
        assert b["round_positions"] == [0, 0, 0]
    # round k starts one variant later: each variant first, second and last once
    assert [r["round_positions"] for r in interleaved] == [[0, 2, 1], [1, 0, 2], [2, 1, 0]]
    assert all(r["loss_ok"] for r in interleaved[1:])


def test_traced_variants_trace_the_kernels_during_their_steps_only(monkeypatch):
    """A traced variant's steps run with normkit.ops in "triton" mode (what torch.compile would trace), the
    others' in the mode set before, restored after each step; eager, a traced variant trains as its plain one."""
    from normkit import ops

    seen = []
    train_step = model.train_step

    def recording(net, optimizer, tokens):
        seen.append(ops.get_compile_ops())
        return train_step(net, optimizer, tokens)

    monkeypatch.setattr(model, "train_step", recording)
    settings = model.Settings(variants=("patched", "traced", "fused", "fused-traced"), modes=("eager",), layers=1,
                              hidden=64, seq=8, batch=1, vocab=64, steps=2, warmup=1, dtype="fp32")
    rows, _ = model.run(settings, torch.device("cpu"), quiet=True)
    assert ops.get_compile_ops() == "opaque"
    assert seen[:4] == ["opaque", "triton", "opaque", "triton"]  # the warm-up step of each, in order
    assert sorted(seen) == ["opaque"] * 6 + ["triton"] * 6
    losses = {r["impl"]: r["losses"] for r in rows}
    assert losses["traced"] == losses["patched"] and losses["fused-traced"] == losses["fused"]
    assert "fused: " in rows[3]["note"] and "fused: " not in rows[1]["note"]
    assert model.Settings().variants == ("stock", "patched", "fused", "liger")


def test_qwen3_next_says_which_linear_attention_runs_and_patches_its_gated_norms(capsys):
    settings = model.Settings(model="qwen3-next", variants=("patched",), modes=("eager",), layers=4, hidden=64,
                              seq=16, batch=1, vocab=256, steps=1, warmup=1)
    rows, env = model.run(settings, torch.device("cpu"), quiet=True)
    assert "3 of 4 layers are gated delta-nets" in env["linear_attention"]
    assert "flash-linear-attention" in env["linear_attention"] and "Qwen3NextRMSNormGated" in env["linear_attention"]
    assert "Qwen3NextRMSNormGated ×3" in rows[0]["note"] and "error" not in rows[0]


def test_liger_is_a_row_that_says_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "liger_kernel", None)  # import fails, installed or not
    settings = model.Settings(variants=("liger",), modes=("eager",), layers=1, hidden=64, seq=8, batch=1, vocab=64,
                              steps=1, warmup=1)
    rows, _ = model.run(settings, torch.device("cpu"), quiet=True)
    assert rows[0]["unavailable"] == "not installed" and "losses" not in rows[0]
    assert model_cli.table_rows(rows)[0][:3] == ["liger", "eager", "not installed"]


def test_liger_gets_only_its_rms_norm_and_leaves_transformers_classes_as_they_were(monkeypatch):
    from transformers.models.llama import modeling_llama

    calls, stock_class = [], modeling_llama.LlamaRMSNorm

    def apply_liger_kernel_to_llama(**kwargs):  # what Liger's does to the modeling module: rebinds its classes
        calls.append(kwargs)
        modeling_llama.LlamaRMSNorm = torch.nn.Identity

    fake = types.ModuleType("liger_kernel.transformers")
    fake.apply_liger_kernel_to_llama = apply_liger_kernel_to_llama
    monkeypatch.setitem(sys.modules, "liger_kernel", types.ModuleType("liger_kernel"))
    monkeypatch.setitem(sys.modules, "liger_kernel.transformers", fake)
    tiny = model.build_model(model.Settings(layers=1, hidden=64, vocab=64), torch.device("cpu"))
    note = model.apply_variant(tiny, "liger", model.Settings())
    assert calls == [{"rope": False, "cross_entropy": False, "fused_linear_cross_entropy": False, "rms_norm": True,
                      "swiglu": False, "model": tiny}]
    assert modeling_llama.LlamaRMSNorm is stock_class and "apply_liger_kernel_to_llama(rms_norm=True" in note


def test_widths_follow_the_released_models_and_scale_with_hidden():
    config = model.build_config(model.Settings(model="llama"))
    assert (config.hidden_size, config.num_hidden_layers, config.intermediate_size, config.num_attention_heads,
            config.num_key_value_heads, config.head_dim) == (2048, 8, 8192, 32, 8, 64)
    config = model.build_config(model.Settings(model="qwen3"))
    assert (config.intermediate_size, config.num_attention_heads, config.num_key_value_heads, config.head_dim) == (
        6144, 16, 8, 128)
    config = model.build_config(model.Settings(model="qwen3-next"))
    assert (config.num_attention_heads, config.num_key_value_heads, config.head_dim, config.linear_num_key_heads,
            config.linear_num_value_heads, config.mlp_only_layers) == (16, 2, 256, 16, 32, list(range(8)))
    assert config.layer_types.count("linear_attention") == 6
    small = model.build_config(model.Settings(model="llama", hidden=64, layers=2, vocab=100))
    assert (small.intermediate_size, small.num_attention_heads, small.num_key_value_heads, small.vocab_size) == (
        256, 4, 1, 100)


def test_losses_beyond_the_tolerance_are_marked_and_fail_the_command(tmp_path, capsys):
    rows = [{"impl": impl, "mode": "eager", "losses": losses, "step_s": 1.0, "step_p20_s": 1.0, "step_p80_s": 1.0,
             "first_step_s": 1.0} for impl, losses in (("stock", [10.0, 9.0]), ("patched", [10.0, 9.0 * (1 + 2e-3)]),
                                                       ("fused", [10.0, 9.0 * (1 + 5e-4)]))]
    model.add_loss_agreement(rows, 1e-3)
    assert [r.get("loss_ok") for r in rows] == [None, False, True]
    assert rows[1]["loss_rel_diff"] == pytest.approx(2e-3) and rows[1]["loss_reference"] == "stock eager"
    assert model_cli.table_rows(rows)[1][-1] == "2.0e-03 ✗"
    args = model_cli.parser().parse_args(["--model", "llama", "--csv", str(tmp_path / "rows.csv")])
    assert model_cli.finish(args, rows, {"loss_rtol": 1e-3}) == 1
    assert "normkit patched eager: losses 2.0e-03 from stock's, beyond 0.001" in capsys.readouterr().err
    with open(tmp_path / "rows.csv") as f:  # the kernel benchmark's leading columns; lists stay in the JSON
        header = next(csv.reader(f))
    assert header[:len(output.LEADING_COLUMNS)] == list(output.LEADING_COLUMNS) and "losses" not in header


def test_the_profile_groups_kernels_and_renders(capsys):
    settings = model.Settings(variants=("stock",), modes=("eager",), layers=1, hidden=64, seq=8, batch=1, vocab=64,
                              steps=1, warmup=1, profile=True)
    rows, _ = model.run(settings, torch.device("cpu"), quiet=True)
    result = rows[0]["profile"]
    assert result["clock"] == "CPU" and result["steps"] == model_profile.STEPS
    assert sum(result["groups"].values()) == pytest.approx(result["total_us"]) and result["groups"]["matmul"] > 0
    assert len(result["kernels"]) > model_profile.TOP and sum(k["us"] for k in result["kernels"]) == pytest.approx(
        result["total_us"])  # every kernel in the JSON, the top ones printed
    rendered = model_profile.render(rows)
    left_out = result["kernels"][model_profile.TOP]["name"]  # (a row starts with its name; names may nest)
    assert "Profile (eager): CPU ms a step" in rendered and not re.search(rf"^{re.escape(left_out)}\s", rendered, re.M)
    assert [model_profile.group_of(name) for name in (
        "norm_fwd_kernel", "nvjet_tst_256x128_64x4_1x2_h_bz_TNT", "_rms_norm_backward_kernel",
        "void at::native::vectorized_elementwise_kernel<4>", "pytorch_flash::flash_bwd_kernel")] == [
        "normkit", "matmul", "liger", "other", "attention"]


@pytest.mark.parametrize("name, group", [
    # Inductor's names for a compiled Llama layer's RMSNorm forward, backward, and Qwen3's q_norm with its rope
    ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", "inductor: norm"),
    ("triton_red_fused__to_copy__unsafe_view_add_div_expand_mul_pow_sum_view_2", "inductor: norm"),
    ("triton_per_fused__to_copy__unsafe_view_add_cat_mean_mul_neg_pow_rsqrt_slice_3", "inductor: norm"),
    ("triton_red_fused_native_layer_norm_native_layer_norm_backward_1", "inductor: norm"),
    ("triton_poi_fused__unsafe_view_mul_silu_silu_backward_view_0", "inductor: rest"),
    # eager PyTorch's rsqrt is no Inductor kernel
    ("void at::native::vectorized_elementwise_kernel<4, at::native::rsqrt_kernel_cuda(at::TensorIteratorBase&)>",
     "other"),
])
def test_inductor_kernels_of_a_norm_have_their_own_group(name, group):
    assert model_profile.group_of(name) == group


def test_bench_help_names_the_model_command_and_the_model_help_its_options(capsys):
    status, out, _ = _run(["bench", "--help"], capsys)
    assert status == 0 and "--model {llama,qwen3,qwen3-next}" in out
    status, out, _ = _run(["bench", "--model", "llama", "--help"], capsys)
    assert status == 0 and out.startswith("usage: python -m normkit bench")
    for option in ("--variants", "--modes", "--batch", "--seq", "--layers", "--steps", "--warmup", "--dtype",
                   "--profile", "--compile-scope", "--json", "--csv"):
        assert option in out
    assert "Without a GPU" in out and all(action.help for action in model_cli.parser()._actions)


@pytest.mark.parametrize("argv, message", [
    (["--model", "gpt2"], "argument --model: invalid choice: 'gpt2'"),
    (["--model", "llama", "--steps", "0"], "argument --steps: --steps must be a whole number ≥ 1, got '0'"),
    (["--model", "llama", "--variants", "stock,fast"],
     "argument --variants: --variants must be among stock, patched, fused, liger, traced, fused-traced, got "
     "'stock,fast'"),
    (["--model", "llama", "--modes", "jit"], "argument --modes: --modes must be among eager, compile, got 'jit'"),
    (["--model", "llama", "--dtype", "fp64"], "argument --dtype: invalid choice: 'fp64'"),
])
def test_bad_options_end_in_one_error_line(argv, message, capsys):
    status, out, err = _run(["bench", *argv], capsys)
    errors = [line for line in err.splitlines() if "error:" in line]
    assert status == 2 and out == "" and len(errors) == 1 and message in errors[0], err


@pytest.mark.skipif(torch.cuda.is_available(), reason="the size limit holds only without a GPU")
def test_without_a_gpu_the_default_size_is_refused_with_a_small_one_to_try(capsys):
    status, out, err = _run(["bench", "--model", "qwen3"], capsys)
    assert status == 2 and out == ""
    assert "no GPU here" in err and "--hidden ≤ 256" in err and model_cli.CPU_EXAMPLE in err


@pytest.mark.parametrize("field, value, message", [
    ("model", "gpt2", "model must be among llama, qwen3, qwen3-next, got ['gpt2']"),
    ("variants", ("stock", "fast"),
     "variants must be among stock, patched, fused, liger, traced, fused-traced, got ('stock', 'fast')"),
    ("modes", (), "modes must be among eager, compile, got ()"),
    ("compile_scope", "graph", "compile_scope must be among layers, model, got ['graph']"),
])
def test_run_names_a_bad_setting(field, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        model.run(model.Settings(**{field: value}), torch.device("cpu"))
