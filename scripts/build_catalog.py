#!/usr/bin/env python3
"""Build `modelwire/adapters/providers/catalog.json` from a pinned `@earendil-works/pi-ai` release.

The catalog is package data; it is never fetched at run time. This maintainer script runs
`npm pack @earendil-works/pi-ai@<version>` in a temporary directory (or reads a tarball given with
`--tarball`), reads the provider modules (`dist/providers/<id>.js`: display name, base URL, the
api-key environment variables) and the model data (`dist/providers/data/<id>.json`: capacities,
reasoning maps, compat and prices in USD per million tokens), and keeps every provider that a
key, ambient AWS credentials or an account id reaches over a protocol modelwire speaks; only
OAuth-only providers are withheld, each with its reason. The recommended model of each provider
comes from the same release of `@earendil-works/pi-coding-agent` (`defaultModelPerProvider`,
`--agent-tarball`). Both packages are MIT licensed.

Usage: python scripts/build_catalog.py [--version 0.82.1] [--tarball FILE] [--agent-tarball FILE]
       [--out PATH]
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
AGENT_PACKAGE = "@earendil-works/pi-coding-agent"
PINNED_VERSION = "0.82.1"
PROTOCOLS = (
    "openai-completions",
    "openai-responses",
    "anthropic-messages",
    "google-generative-ai",
    "mistral-conversations",
    "azure-openai-responses",
    "bedrock-converse-stream",
)
OUT = Path(__file__).resolve().parents[1] / "src/modelwire/adapters/providers/catalog.json"

# OAuth-only providers: no key, ambient credential or account id reaches them.
WITHHELD = {
    "github-copilot": "OAuth-only: needs a GitHub Copilot login and Copilot's dynamic headers",
    "openai-codex": "OAuth-only: needs a ChatGPT (Codex) login",
    "google-vertex": "OAuth-only here: Vertex AI needs Google Application Default Credentials; "
    "use the google provider (Gemini API key) instead",
}
# Where a provider's key comes from when its module does not use `envApiKeyAuth`: Anthropic
# reads a token variable first (the plain key is ANTHROPIC_API_KEY); Bedrock's bearer token
# (else ambient AWS credentials, SigV4); Cloudflare's key beside the account id placeholders.
SPECIAL_KEY_ENV = {
    "anthropic": ["ANTHROPIC_API_KEY"],
    "amazon-bedrock": ["AWS_BEARER_TOKEN_BEDROCK"],
    "cloudflare-workers-ai": ["CLOUDFLARE_API_KEY"],
    "cloudflare-ai-gateway": ["CLOUDFLARE_API_KEY"],
}
# Providers whose endpoint is per account: the placeholder is filled from the environment.
BASE_URL = {
    "azure-openai-responses": "https://{AZURE_OPENAI_RESOURCE_NAME}.openai.azure.com/openai/v1",
}
_DEFAULTS = re.compile(r"defaultModelPerProvider\s*=\s*\{(.*?)\}", re.S)
_DEFAULT_ENTRY = re.compile(r'"?([A-Za-z0-9-]+)"?\s*:\s*"([^"]+)"')

_ID = re.compile(r'\bid:\s*"([^"]+)"')
_NAME = re.compile(r'createProvider\(\{\s*id:\s*"[^"]+",\s*name:\s*"([^"]+)"')
_BASE = re.compile(r'createProvider\(\{[^}]*?baseUrl:\s*"([^"]+)"', re.S)
_ENV_AUTH = re.compile(r'envApiKeyAuth\("([^"]+)",\s*\[([^\]]*)\]\)')


def _snake(name: str) -> str:
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return words.lower().replace("open_ai", "openai")


def _fetch(package: str, version: str, workdir: Path) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["npm", "pack", f"{package}@{version}", "--silent"],
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
        "base_url": BASE_URL.get(pid) or (base.group(1) if base else None),
        "api_key_env": key_env,
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
    cost = raw.get("cost")
    if cost:
        out["cost"] = {
            "input": cost.get("input", 0),
            "output": cost.get("output", 0),
            "cache_read": cost.get("cacheRead", 0),
            "cache_write": cost.get("cacheWrite", 0),
        }
        tiers = [
            {
                "input_tokens_above": int(t["inputTokensAbove"]),
                "input": t.get("input", 0),
                "output": t.get("output", 0),
                "cache_read": t.get("cacheRead", 0),
                "cache_write": t.get("cacheWrite", 0),
            }
            for t in cost.get("tiers") or ()
        ]
        if tiers:
            out["cost"]["tiers"] = tiers
    return out


def recommended_models(agent_dir: Path) -> dict[str, str]:
    """`defaultModelPerProvider` of an unpacked pi-coding-agent package."""
    source = (agent_dir / "dist/core/model-resolver.js").read_text()
    found = _DEFAULTS.search(source)
    if found is None:
        raise SystemExit("pi-coding-agent: defaultModelPerProvider not found")
    return dict(_DEFAULT_ENTRY.findall(found.group(1)))


def build(
    package_dir: Path, version: str, recommended: dict[str, str] | None = None
) -> dict[str, Any]:
    """Return the catalog document built from an unpacked pi-ai package directory
    (`recommended`: provider id → its recommended model id)."""
    recommended = recommended or {}
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
        data = json.loads(data_file.read_text())
        models = [
            _model(m)
            for api, by_id in sorted(data.items())
            if api in PROTOCOLS
            for _, m in sorted(by_id.items())
        ]
        if not models:
            withheld[pid] = "speaks no protocol modelwire serves"
            continue
        entry: dict[str, Any] = {
            "name": meta["name"],
            "base_url": meta["base_url"],
            "api_key_env": meta["api_key_env"],
        }
        wanted = recommended.get(pid)
        if wanted is not None and any(m["id"] == wanted for m in models):
            entry["recommended"] = wanted
        elif wanted is not None:
            print(f"{pid}: recommended model {wanted!r} is not in the catalog", file=sys.stderr)
        entry["models"] = models
        providers[pid] = entry
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
    parser.add_argument("--agent-tarball", type=Path)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tarball = args.tarball or _fetch(PACKAGE, args.version, work / "ai")
        agent = args.agent_tarball or _fetch(AGENT_PACKAGE, args.version, work / "agent")
        for name, archive in (("ai", tarball), ("agent", agent)):
            with tarfile.open(archive) as tar:
                tar.extractall(work / name, filter="data")
        recommended = recommended_models(work / "agent" / "package")
        doc = build(work / "ai" / "package", args.version, recommended)
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=False) + "\n")
    count = sum(len(p["models"]) for p in doc["providers"].values())
    print(f"{args.out}: {len(doc['providers'])} providers, {count} models", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
