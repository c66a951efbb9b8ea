"""``complexorder translate {train,eval,run,average,download}``: Multi30k En->De translation (paper Table 5)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path

from ..checkpoint import (append_jsonl, atomic_write_text, check_results_file, check_text_output, check_writable,
                          resume_point, same_file)
from ..config import config_to_dict, json_ready
from ..environment import DEVICE_HELP, NO_PROGRESS_HELP, resolve_device, set_threads


def _decode_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--beam-size", type=int, help="beam size (1 = greedy; default: the checkpoint's config)")
    # [-10, 10]: translation.MAX_LENGTH_PENALTY (not imported here: the command line starts without it)
    p.add_argument("--length-penalty", type=float,
                   help="hypothesis score = log p / length ** LENGTH_PENALTY, a number in [-10, 10]; 0 ranks by log p "
                        "alone, larger values favour longer translations (default: the checkpoint's "
                        "decode.length_penalty, 1.0 in the packaged configs)")
    p.add_argument("--batch-size", type=int, help="sentences per decoding batch (default: the checkpoint's "
                                                  "decode.batch_size)")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, help="torch CPU threads (default: $OMP_NUM_THREADS or torch's choice)")
    p.add_argument("--device", help=DEVICE_HELP)
    p.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("translate", help="train, evaluate and apply Multi30k En->De Transformers (paper Table 5)",
                       description="Encoder-decoder Transformers with vanilla, complex-vanilla or complex-order "
                                   "embeddings on Multi30k English->German, scored with sacrebleu.")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    t = actions.add_parser("train", help="train (or resume) a model from a config",
                           description="Trains an encoder-decoder Transformer on Multi30k En->De from a config "
                                       "(packaged or a TOML file; --set overrides). Checkpoints go to --run-dir every "
                                       "epoch; a run directory holding last.pt is resumed (same config).")
    t.add_argument("--config", required=True,
                   help="a packaged config name (e.g. cpu-complex-order, paper-vanilla) or a TOML file")
    t.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                   help="override a config value, e.g. --set train.max_steps=2000 (repeatable)")
    t.add_argument("--run-dir", "--out", dest="run_dir",
                   help="where checkpoints and logs go (default: runs/translation/NAME, NAME the config's `name`: a packaged "
                        "config's own, or a TOML file's, else the file's name without .toml)")
    t.add_argument("--data-dir", help="data directory holding translation/multi30k "
                                      "(default: $COMPLEXORDER_DATA or ~/.cache/complexorder/data)")
    _common(t)

    e = actions.add_parser("eval", help="BLEU of a checkpoint on a Multi30k split (detokenized and tokenized lc)",
                           description="Translates a Multi30k split with a checkpoint and scores it with sacrebleu: "
                                       "detokenized BLEU and tokenized lower-cased BLEU (13a), each with its "
                                       "signature.")
    e.add_argument("--checkpoint", required=True, help="a translation checkpoint (epochN.pt, last.pt, averaged)")
    e.add_argument("--split", default="test2016", help="val or test2016 (default: test2016); train works too, as a check of fit")
    e.add_argument("--data-dir", help="data directory holding translation/multi30k (default: $COMPLEXORDER_DATA or "
                                      "~/.cache/complexorder/data)")
    e.add_argument("--hypotheses", help="also write the translations to this file")
    e.add_argument("--results", help="append the scores as a JSON line to this file")
    _decode_options(e)
    _common(e)

    r = actions.add_parser("run", help="translate a file or standard input with a trained checkpoint",
                           description="Translates raw sentences, one per line, in full (no source is truncated); "
                                       "empty lines stay empty.")
    r.add_argument("--checkpoint", required=True, help="a translation checkpoint")
    r.add_argument("--input", default="-", help="source sentences, one per line ('-' = standard input)")
    r.add_argument("--output", "--out", dest="output", default="-",
                   help="where the translations go ('-' = standard output)")
    _decode_options(r)
    _common(r)

    a = actions.add_parser("average", help="average the weights of checkpoints of one run",
                           description="Averages the weights of checkpoints of one run (the same config and "
                                       "tokenizer) into a new checkpoint.")
    a.add_argument("checkpoints", nargs="*", help="checkpoints to average")
    a.add_argument("--run-dir", help="average the last --last epoch checkpoints (epochN.pt, one per finished "
                                     "epoch) of this run instead")
    a.add_argument("--last", type=int, help="how many epoch checkpoints with --run-dir (default 5)")
    a.add_argument("--output", "--out", dest="output", required=True, help="the averaged checkpoint")

    d = actions.add_parser("download", help="fetch the raw Multi30k files (needs network; checksummed)",
                           description="Fetches the raw Multi30k En-De files (train, val, test2016) into "
                                       "DATA_DIR/translation/multi30k, checked against their SHA-256.")
    d.add_argument("--data-dir", help="data directory; the files go to DATA_DIR/translation/multi30k (default: "
                                      "$COMPLEXORDER_DATA or ~/.cache/complexorder/data)")
    d.add_argument("--no-progress", action="store_true",
                   help="no download progress bar (it shows only when standard error is a terminal)")
    d.add_argument("--skip-checksum", action="store_true",
                   help="keep files whose SHA-256 differs from the reference: files already in "
                        "DATA_DIR/translation/multi30k (never replaced; without this option they are an error) and "
                        "files downloaded now")
    for parser in (t, e, r, a, d):
        parser.set_defaults(func=run)


def _decode_config(config, args, vocab_size: int):
    changes = {k: v for k, v in (("beam_size", args.beam_size), ("length_penalty", args.length_penalty),
                                 ("batch_size", args.batch_size)) if v is not None}
    for key in ("beam_size", "batch_size"):
        if changes.get(key, 1) < 1:
            raise ValueError(f"--{key.replace('_', '-')} must be at least 1, got {changes[key]}")
    from .translation import MAX_LENGTH_PENALTY, check_decode

    if not (math.isfinite(changes.get("length_penalty", 0.0))
            and abs(changes.get("length_penalty", 0.0)) <= MAX_LENGTH_PENALTY):
        raise ValueError(f"--length-penalty must be a finite number in [-{MAX_LENGTH_PENALTY:g}, "
                         f"{MAX_LENGTH_PENALTY:g}], got {changes['length_penalty']}")

    decode = dataclasses.replace(config.decode, **changes)
    check_decode(decode, where="the checkpoint's decode")  # a checkpoint saved before training checked them
    if decode.beam_size > vocab_size:  # before any decoding (--beam-size 100000 ran out of memory)
        option = "--beam-size" if "beam_size" in changes else "the checkpoint's decode.beam_size"
        raise ValueError(f"{option} must be at most the checkpoint's target vocabulary size, {vocab_size}, "
                         f"got {decode.beam_size}")
    return decode


def run(args: argparse.Namespace) -> int:
    from . import translation as T

    set_threads(getattr(args, "threads", None))
    progress = not getattr(args, "no_progress", False)
    log = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    if args.action == "download":
        from ..data.multi30k import download_multi30k

        print(f"Multi30k is in {download_multi30k(args.data_dir, progress=progress, verify=not args.skip_checksum)}")
        return 0
    # before any work: an unwritable output, or one that would overwrite an input, is a one-line error
    reads = {}
    if getattr(args, "checkpoint", None):
        reads["the checkpoint this command loads (--checkpoint)"] = args.checkpoint
    if args.action == "run":
        reads["the input file (--input)"] = args.input
    elif args.action == "eval":  # the split's two files (a missing one is named later, by the evaluation)
        from ..data.multi30k import multi30k_dir

        for lang in ("en", "de"):
            path = multi30k_dir(args.data_dir) / f"{args.split}.{lang}"
            reads[f"a file of the {args.split} split ({path.name})"] = path
        from ..data.multi30k import SPLITS

        folder = multi30k_dir(args.data_dir)  # the other splits' files too: a translation written over one destroys it
        for path in (folder / f"{split}.{lang}" for split in SPLITS for lang in ("en", "de", "fr", "cs")):
            if path.is_file():
                reads.setdefault(f"a file of the Multi30k data ({path.name})", path)
    for option in ("output", "hypotheses"):
        value = getattr(args, option, None)
        if value is not None and not (option == "output" and value == "-"):  # run's "--output -" is standard output
            check_writable(value, f"--{option}", inputs=reads)
            if args.action in ("run", "eval"):  # text: not over a checkpoint, a results file or a training log
                check_text_output(value, f"--{option}")
    hyps, results = getattr(args, "hypotheses", None), getattr(args, "results", None)
    if hyps and results and same_file(hyps, results) and (Path(hyps).is_file() or not Path(hyps).exists()):
        # (a device named twice, /dev/null, destroys nothing)
        raise ValueError(f"--hypotheses and --results name one file ({args.results}); the translations and the JSON "
                         "result would be written into each other — give two files")
    if getattr(args, "results", None) is not None:
        check_results_file(args.results, "--results", record=("bleu_tok_lc", "translate eval's records"))
    if args.action == "average":
        if args.run_dir and args.checkpoints:
            raise ValueError("give checkpoints to average or --run-dir, not both")
        if args.last is not None and not args.run_dir:  # stop 81: ignored without a word
            raise ValueError(f"--last {args.last} applies to --run-dir only (the last N epoch checkpoints there); the "
                             "checkpoints given by name are averaged as given")
        if args.run_dir:
            args.last = 5 if args.last is None else args.last
            if args.last < 1:
                raise ValueError(f"--last must be at least 1, got {args.last}")
            if not Path(args.run_dir).is_dir():
                raise FileNotFoundError(f"--run-dir {args.run_dir} "
                                        f"{'is not a directory' if Path(args.run_dir).exists() else 'does not exist'}")
            found = T.epoch_checkpoints(Path(args.run_dir))
            if not found:
                raise FileNotFoundError(f"--run-dir {args.run_dir}: no epochN.pt checkpoints there")
            paths = found[-args.last:]
            if len(found) < args.last:  # not an error (all of them are averaged), but never silent
                log(f"note: --last {args.last}, but {args.run_dir} holds {len(found)} epoch checkpoint(s); averaging "
                    f"all {len(found)}")
        else:
            paths = [Path(p) for p in args.checkpoints]
        if not paths:
            raise ValueError("give checkpoints to average or --run-dir")
        # a checkpoint given twice and an --output that is one of them: refused by average_checkpoints, before work
        T.average_checkpoints(paths, args.output)
        print(f"averaged {', '.join(p.name for p in paths)} into {args.output}")
        return 0
    if args.action == "train":
        config = T.resolve_config(args.config, args.set, option="--set")  # errors name --set
        run_dir = Path(args.run_dir or Path("runs") / "translation" / config.name)
        args.on_interrupt = lambda: (f"the same command continues from {resume_point(run_dir / 'last.pt')}; the "
                                     f"steps after it are trained again (a checkpoint is written every "
                                     f"train.save_every_steps = {config.train.save_every_steps} steps, 0: every "
                                     f"epoch)")
        summary = T.train_translation(config, run_dir, args.data_dir, progress=progress, log=log,
                                      device=resolve_device(args.device))
        log(f"{config.name}: done after {summary['step']} steps, {summary['train_seconds']:.0f} s of training; "
            f"checkpoints in {run_dir}")
        print(json.dumps(json_ready(summary), sort_keys=True))
        return 0
    model, tokenizer, config = T.load_translator(args.checkpoint, resolve_device(args.device))
    decode = _decode_config(config, args, model.tgt_vocab_size)
    if args.action == "eval" and args.hypotheses and (config.data.src_lang, config.data.tgt_lang) != ("en", "de"):
        from ..data.multi30k import split_files  # the model's own languages (checked above: en and de)

        files = split_files(args.data_dir, args.split, config.data.src_lang, config.data.tgt_lang)
        check_writable(args.hypotheses, "--hypotheses",
                       inputs={f"a file of the {args.split} split ({f.name})": f for f in files})
    if args.action == "eval":
        scores, hyps = T.evaluate_split(model, tokenizer, config, args.split, args.data_dir, decode=decode,
                                        progress=progress)
        scores.update(checkpoint=str(args.checkpoint), name=config.name, variant=config.model.variant)
        if scores.get("source_unk_words"):
            from ..data.multi30k import split_files

            source = split_files(args.data_dir, args.split, config.data.src_lang, config.data.tgt_lang)[0]
            log(T.unknown_words_note(scores["source_unk_words"], scores["source_words"], str(source)))
        detok = "n/a (word-level output)" if scores["bleu"] is None else \
            f"{scores['bleu']:.2f} ({scores['bleu_signature']})"
        print(f"{config.name} {args.split}: BLEU {detok}; "  # first: a file that cannot be written loses no score
              f"tokenized lower-cased BLEU {scores['bleu_tok_lc']:.2f} ({scores['bleu_tok_lc_signature']})",
              flush=True)
        if args.hypotheses:
            atomic_write_text(args.hypotheses, "".join(h + "\n" for h in hyps))
        if args.results:
            append_jsonl(args.results, {**scores, "config": config_to_dict(config)})
        return 0
    from ..data.multi30k import decode_lines, read_lines

    if args.input != "-" and (Path(args.input).is_dir() or not Path(args.input).exists()):  # a pipe is fine
        what = "is a directory" if Path(args.input).is_dir() else "does not exist"
        raise FileNotFoundError(f"--input {args.input} {what}; expected a text file with one sentence per line, or - "
                                f"for standard input")
    sentences = read_lines(args.input) if args.input != "-" else decode_lines(sys.stdin.buffer.read(), "<stdin>")
    if not sentences:  # not an error (an empty file translates to an empty file), but never silent
        log(f"note: {'standard input' if args.input == '-' else args.input} holds no lines; nothing to translate")
    unknown, words = T.count_unknown_words(tokenizer, sentences)
    if unknown:
        log(T.unknown_words_note(unknown, words, "standard input" if args.input == "-" else args.input))
    out = T.translate_sentences(model, tokenizer, sentences, decode, progress=progress and args.output != "-")
    text = "".join(o + "\n" for o in out)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        atomic_write_text(args.output, text)
    return 0
