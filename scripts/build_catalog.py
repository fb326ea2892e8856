#!/usr/bin/env python3
"""Build `modelwire/adapters/providers/catalog.json` from a pinned `@earendil-works/pi-ai` release.

The catalog is package data; it is never fetched at run time. This maintainer script runs
`npm pack @earendil-works/pi-ai@<version>` in a temporary directory (or reads a tarball given with
`--tarball`), reads the provider modules (`dist/providers/<id>.js`: display name, base URL, the
api-key environment variables) and the model data (`dist/providers/data/<id>.json`), and keeps
only the providers that authenticate with a plain key over the three protocols modelwire speaks
(`openai-completions`, `openai-responses`, `anthropic-messages`). pi-ai is MIT licensed.

Usage: python scripts/build_catalog.py [--version 0.82.1] [--tarball FILE] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

PACKAGE = "@earendil-works/pi-ai"
PINNED_VERSION = "0.82.1"
PROTOCOLS = ("openai-completions", "openai-responses", "anthropic-messages")
OUT = Path(__file__).resolve().parents[1] / "src/modelwire/adapters/providers/catalog.json"

# Providers whose requests need more than "key + endpoint + headers" even though their models
# speak one of the three protocols: dynamic per-request headers (GitHub Copilot) or base URLs
# with account placeholders substituted by a provider-specific stream wrapper (Cloudflare).
WITHHELD = {
    "github-copilot": "requests need Copilot's dynamic headers",
}
# Anthropic's api-key method reads a token env var first; the plain key is ANTHROPIC_API_KEY.
SPECIAL_KEY_ENV = {"anthropic": ["ANTHROPIC_API_KEY"]}

_ID = re.compile(r'\bid:\s*"([^"]+)"')
_NAME = re.compile(r'createProvider\(\{\s*id:\s*"[^"]+",\s*name:\s*"([^"]+)"')
_BASE = re.compile(r'createProvider\(\{[^}]*?baseUrl:\s*"([^"]+)"', re.S)
_ENV_AUTH = re.compile(r'envApiKeyAuth\("([^"]+)",\s*\[([^\]]*)\]\)')
_WRAPPED = re.compile(r"\b\w+Streams\(")


def _snake(name: str) -> str:
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return words.lower().replace("open_ai", "openai")


def _fetch(version: str, workdir: Path) -> Path:
    subprocess.run(
        ["npm", "pack", f"{PACKAGE}@{version}", "--silent"],
        cwd=workdir,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return next(workdir.glob("*.tgz"))


def _provider_meta(source: str, pid: str) -> dict[str, Any] | None:
    ids = _ID.findall(source)
    if pid not in ids:
        return None
    name = _NAME.search(source)
    base = _BASE.search(source)
    env = _ENV_AUTH.search(source)
    key_env = SPECIAL_KEY_ENV.get(pid)
    if key_env is None and env is not None:
        key_env = [v.strip().strip('"') for v in env.group(2).split(",") if v.strip()]
    return {
        "name": name.group(1) if name else pid,
        "base_url": base.group(1) if base else None,
        "api_key_env": key_env,
        "wrapped": bool(_WRAPPED.search(source)),
    }


def _model(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": raw["id"],
        "name": raw["name"],
        "api": raw["api"],
        "base_url": raw.get("baseUrl") or None,
        "reasoning": bool(raw.get("reasoning")),
        "input": list(raw.get("input") or ["text"]),
        "context_window": int(raw["contextWindow"]),
        "max_tokens": int(raw["maxTokens"]),
    }
    if raw.get("thinkingLevelMap") is not None:
        out["thinking_level_map"] = raw["thinkingLevelMap"]
    if raw.get("compat"):
        out["compat"] = {_snake(k): v for k, v in raw["compat"].items()}
    if raw.get("headers"):
        out["headers"] = raw["headers"]
    return out


def build(package_dir: Path, version: str) -> dict[str, Any]:
    """Return the catalog document built from an unpacked pi-ai package directory."""
    providers_dir = package_dir / "dist/providers"
    manifest = json.loads((providers_dir / "data/.manifest.json").read_text())
    providers: dict[str, Any] = {}
    withheld: dict[str, str] = {}
    for data_file in sorted((providers_dir / "data").glob("[!.]*.json")):
        pid = data_file.stem
        module = providers_dir / f"{pid}.js"
        meta = _provider_meta(module.read_text(), pid) if module.exists() else None
        if meta is None:
            withheld[pid] = "no provider module"
            continue
        if pid in WITHHELD:
            withheld[pid] = WITHHELD[pid]
            continue
        if not meta["api_key_env"]:
            withheld[pid] = "no plain api-key authentication"
            continue
        if meta["wrapped"]:
            withheld[pid] = "needs a provider-specific stream wrapper"
            continue
        data = json.loads(data_file.read_text())
        models = [
            _model(m)
            for api, by_id in sorted(data.items())
            if api in PROTOCOLS
            for _, m in sorted(by_id.items())
        ]
        if not models:
            withheld[pid] = "speaks none of the three protocols"
            continue
        providers[pid] = {
            "name": meta["name"],
            "base_url": meta["base_url"],
            "api_key_env": meta["api_key_env"],
            "models": models,
        }
    return {
        "source": {
            "package": PACKAGE,
            "version": version,
            "license": "MIT",
            "generated_at": manifest.get("generatedAt"),
            "structure_hash": manifest.get("structureHash"),
        },
        "withheld": withheld,
        "providers": providers,
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: fetch (or read) the pinned tarball and write the catalog JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default=PINNED_VERSION)
    parser.add_argument("--tarball", type=Path)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tarball = args.tarball or _fetch(args.version, work)
        with tarfile.open(tarball) as tar:
            tar.extractall(work, filter="data")
        doc = build(work / "package", args.version)
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=False) + "\n")
    count = sum(len(p["models"]) for p in doc["providers"].values())
    print(f"{args.out}: {len(doc['providers'])} providers, {count} models", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
