"""A deterministic synthetic corpus of agent memories, query sets, and an embedding cache.

How it is generated (also written into the results):

* One ``random.Random(seed)`` drives everything, item by item, so the first n items
  are the same whatever total size is asked for (the 10k corpus is a prefix of 100k).
* Each memory has a node type (fact 30%, preference 15%, decision 15%, event 20%,
  observation 8%, task 7%, person 5%) and starts from one of several templates per type
  ("User prefers {tech} over {tech} for {area}", "Decided to move {project} from {tech}
  to {tech} after {event}", "{name} from {team} reported {count} {noun}s in {project} on
  {date}", ...).
* Slots draw from a mixed vocabulary: ~150 first and ~90 last names, ~190 tech terms,
  ~60 places, ~40 teams, ~130 common nouns/verbs/adjectives, numbers (versions, ports,
  counts, percentages, money, dates) and 3,000 generated project codenames. Nouns, tech
  terms and codenames are drawn with Zipf-like weights (1/rank), so a few words are
  very common and most are rare, as in real notes.
* Clauses ("because ...", "according to {name}", "which broke {noun}", ...) are
  appended until a target length drawn from a clipped log-normal (median ~17 words,
  range 8-40) is reached; the text is cut at 40 words.
* Memories also get created_at spread over the past 400 days, 0-3 tags, an agent id.

Query sets (separate seeds; each query is built from a target memory of the corpus):
``short`` 2-3 of its content words; ``question`` a templated natural question around
3-5 of its words; ``long`` a 15-30 word request mixing its words with filler.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

import numpy as np

from bench.common import CACHE_DIR

GENERATOR_VERSION = 1
EPOCH = datetime(2025, 6, 1, tzinfo=timezone.utc)

FIRST = """Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy
Rupert Sybil Trent Victor Walter Yusuf Zoe Amara Bashir Chen Dmitri Elena Farah Gustavo
Hana Ines Jonas Kenji Lucia Mateo Nadia Oskar Priya Quentin Rosa Sven Tariq Uma Vera
Wei Xenia Yara Zeno Aiko Bruno Chiara Diego Emeka Fatima Goran Hiro Imani Jamal Kai
Leila Marco Nia Omar Paula Raj Sara Tomas Ulla Vikram Wanda Ximena Yosef Zaid Anya
Boris Camille Dana Eitan Freya Gabriel Hugo Isla Jin Kofi Lena Milo Noor Otto Pia
Quinn Reza Sofia Theo Ugo Valeria Will Xavier Yuki Zara Arjun Beatriz Cyrus Daria
Elio Flora Gita Henrik Ilse Joao Kira Luca Maya Nils Orla Pavel Rhea Samir Tara Ulf
Vivian Wren Ada Linus Grace Ken Barbara Dennis Margaret Guido Bjarne Anders Rich Yukihiro
Brendan Rob Sanjay Tim Jeff Mitchell Kelsey Jess Priyanka Ravi Olga Mehmet Ahmed""".split()
LAST = """Smith Garcia Müller Rossi Kowalski Nguyen Tanaka Kim Silva Novak Jensen Dubois
Ivanova Haddad Okafor Patel Chen Schmidt Moreau Lindqvist Costa Horvath Yilmaz Sato
Fischer Romero Nakamura Andersen Kaur Mendes Popescu Weber Lopez Hughes Murphy Kelly
Brennan Torres Ahmed Ali Cohen Levi Peters Wagner Becker Hoffmann Schulz Koch Richter
Klein Wolf Neumann Schwarz Zimmermann Braun Krüger Hartmann Lange Werner Krause Meier
Lehmann Köhler Walter Mayer Huber Kaiser Fuchs Peters Lang Scholz Möller Vogel Jung
Hahn Keller Graf Roth Frank Baumann Beck Lorenz Simon Ortega Reyes Castro Vargas Park""".split()
TECH = """Python TypeScript JavaScript Rust Go Java Kotlin Swift Ruby Elixir Haskell Scala
C++ C# Zig Lua Bash PostgreSQL MySQL SQLite Redis MongoDB Cassandra DynamoDB ClickHouse
Elasticsearch OpenSearch Kafka RabbitMQ NATS Pulsar Kubernetes Docker Podman Helm
Terraform Pulumi Ansible Nomad Consul Vault Nginx Envoy Traefik Caddy HAProxy React Vue
Svelte Angular Next.js Remix Astro Django Flask FastAPI Rails Phoenix Spring Express
Node.js Deno Bun webpack Vite esbuild Rollup Babel pytest Jest Vitest Playwright Cypress
Selenium GitHub GitLab Bitbucket Jenkins CircleCI Buildkite ArgoCD Flux Grafana
Prometheus Loki Tempo Jaeger OpenTelemetry Datadog Sentry PagerDuty Opsgenie Slack
Jira Linear Notion Confluence Figma AWS GCP Azure Lambda S3 EC2 ECS EKS GKE CloudRun
BigQuery Snowflake Redshift Databricks Spark Airflow Dagster Prefect dbt Pandas Polars
NumPy PyTorch TensorFlow JAX ONNX Triton CUDA LLM embeddings RAG pgvector FAISS usearch
HNSW BM25 FTS5 WAL gRPC GraphQL REST OAuth OIDC JWT SAML TLS mTLS WireGuard Tailscale
SSH DNS CDN Cloudflare Fastly Vercel Netlify Heroku Fly.io DigitalOcean Hetzner Linux
Ubuntu Debian Alpine NixOS macOS Windows WSL Neovim VSCode JetBrains Emacs tmux zsh
fish Homebrew apt pip uv Poetry npm pnpm Yarn Cargo Maven Gradle Bazel CMake Make
Protobuf Avro Parquet JSON YAML TOML CSV Markdown Stripe Twilio SendGrid Auth0 Okta
Supabase Firebase Prisma SQLAlchemy Alembic Celery Sidekiq Temporal""".split()
PLACES = """Berlin Lisbon Tokyo Nairobi Toronto Austin Seattle Boston Denver Madrid Paris
London Dublin Amsterdam Stockholm Oslo Helsinki Warsaw Prague Vienna Zurich Milan Rome
Athens Istanbul Cairo Lagos Accra Mumbai Bangalore Delhi Singapore Jakarta Manila Seoul
Osaka Taipei Sydney Melbourne Auckland Santiago Lima Bogota Mexico-City Montreal
Vancouver Chicago Atlanta Miami Phoenix Portland Munich Hamburg Barcelona Porto Krakow
Tallinn Riga Reykjavik Copenhagen""".split()
TEAMS = """platform infra payments billing search growth mobile web data ML security
compliance support sales marketing design research analytics identity onboarding
checkout logistics inventory pricing ads trust-and-safety SRE release QA frontend
backend devex observability networking storage edge api-gateway notifications
recommendations localization finance legal""".split()
NOUNS = """deploy release build test pipeline migration schema index query cache queue
worker cron job alert incident outage latency timeout error bug regression crash leak
ticket sprint roadmap milestone deadline budget invoice contract customer user account
password token key secret certificate config flag feature experiment dashboard metric
log trace span report review meeting standup retro demo interview offer hire laptop
monitor keyboard desk office flight hotel train visa conference talk workshop course
book article paper notebook dataset model prompt agent memory embedding vector chunk
document repo branch commit merge rebase tag version dependency package library
module function class endpoint route handler request response payload webhook
backup restore snapshot replica shard partition cluster node pod container image
volume disk network firewall proxy gateway domain email calendar reminder note
checklist runbook postmortem estimate quote discount refund subscription plan tier
quota limit threshold SLA SLO SLI benchmark profile allocation heap thread lock""".split()
VERBS = """shipped fixed broke migrated deprecated upgraded rolled-back reviewed approved
rejected scheduled cancelled postponed benchmarked profiled refactored rewrote
documented tested deployed monitored investigated escalated resolved reopened
merged reverted archived renamed split consolidated automated paused resumed""".split()
ADJ = """slow fast flaky stable noisy quiet critical minor urgent blocked risky cheap
expensive legacy new experimental internal public private shared encrypted stale
fresh partial complete broken healthy degraded""".split()
AREAS = """the frontend,the backend,data pipelines,scripting,infrastructure code,unit tests,
the mobile app,internal tools,CLI tools,notebooks,quick prototypes,production services,
the admin panel,batch jobs,the public API,documentation,code review,on-call,
local development,CI""".split(",")
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
MONTHS = """January February March April May June July August September October November
December""".split()
FILLER = """please can you find what we said about the thing with and also remind me
whether there was anything regarding last time I think it was something like maybe
around or so I need the details on""".split()
STOP = set(
    """a an the of to in on for and or but with from by at as is was were be been it its
    this that these those we our us i me my you your he she they them his her their over
    after before because so which who when where what how about into than then also
    any some all not no""".split()
)

NODE_TYPES = [
    ("fact", 30),
    ("preference", 15),
    ("decision", 15),
    ("event", 20),
    ("observation", 8),
    ("task", 7),
    ("person", 5),
]
TAGS = """work personal infra frontend backend db ops security hiring travel finance ml
docs meeting incident preference decision project customer health family""".split()


def _zipf_weights(n: int, s: float = 1.0) -> list[float]:
    return [1.0 / (r**s) for r in range(1, n + 1)]


def _codenames(rng: random.Random, n: int) -> list[str]:
    syll = "ka lo mi ra ven tor sil ban qua zen dor fyn gal hex ion jul kor lum nex orb".split()
    syll += "pax quin rho syl tam uru vel wex xan yor zul ard bel cor dex".split()
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        name = "".join(rng.choice(syll) for _ in range(rng.choice((2, 2, 3)))).capitalize()
        if name not in seen:
            seen.add(name)
            out.append(name)
    return out


@dataclass
class Corpus:
    texts: list[str]
    node_types: list[str]
    tags: list[list[str]]
    created_at: list[datetime]
    agent_ids: list[str]
    seed: int

    def __len__(self) -> int:
        return len(self.texts)

    def prefix(self, n: int) -> Corpus:
        return Corpus(
            self.texts[:n],
            self.node_types[:n],
            self.tags[:n],
            self.created_at[:n],
            self.agent_ids[:n],
            self.seed,
        )

    def digest(self) -> str:
        h = hashlib.sha256()
        for t in self.texts:
            h.update(t.encode("utf-8"))
            h.update(b"\0")
        return h.hexdigest()[:16]


class _Gen:
    """Slot fillers over one RNG."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.projects = _codenames(random.Random(7_919), 3_000)
        self._pw = list(itertools.accumulate(_zipf_weights(len(self.projects), 0.9)))
        self._tw = list(itertools.accumulate(_zipf_weights(len(TECH), 0.8)))
        self._nw = list(itertools.accumulate(_zipf_weights(len(NOUNS), 0.7)))

    def name(self) -> str:
        r = self.rng
        return r.choice(FIRST) if r.random() < 0.6 else f"{r.choice(FIRST)} {r.choice(LAST)}"

    def tech(self) -> str:
        return self.rng.choices(TECH, cum_weights=self._tw)[0]

    def project(self) -> str:
        return self.rng.choices(self.projects, cum_weights=self._pw)[0]

    def noun(self) -> str:
        return self.rng.choices(NOUNS, cum_weights=self._nw)[0]

    def number(self) -> str:
        r = self.rng
        kind = r.randrange(7)
        if kind == 0:
            return f"{r.randint(1, 19)}.{r.randint(0, 30)}"
        if kind == 1:
            ports = (80, 443, 5432, 6379, 8080, 8443, 9090, 3000, 8000, r.randint(1024, 65535))
            return str(r.choice(ports))
        if kind == 2:
            return f"{r.randint(2, 99)}%"
        if kind == 3:
            return f"${r.randint(5, 9_999):,}"
        if kind == 4:
            return f"{r.randint(2, 900)}ms"
        if kind == 5:
            return f"{r.randint(1, 28)} {r.choice(MONTHS)}"
        return str(r.randint(2, 500))

    def when(self) -> str:
        r = self.rng
        return r.choice(
            (
                f"on {r.choice(DAYS)}",
                f"last {r.choice(DAYS)}",
                f"on {r.randint(1, 28)} {r.choice(MONTHS)}",
                f"in {r.choice(MONTHS)}",
                "yesterday",
                "this morning",
                f"{r.randint(2, 11)} weeks ago",
                f"during sprint {r.randint(1, 80)}",
            )
        )

    def fill(self, template: str) -> str:
        r = self.rng
        out = template
        slots = {
            "{name}": self.name,
            "{tech}": self.tech,
            "{project}": self.project,
            "{noun}": self.noun,
            "{num}": self.number,
            "{when}": self.when,
            "{place}": lambda: r.choice(PLACES),
            "{team}": lambda: r.choice(TEAMS),
            "{verb}": lambda: r.choice(VERBS),
            "{adj}": lambda: r.choice(ADJ),
            "{area}": lambda: r.choice(AREAS),
        }
        while "{" in out:
            start = out.index("{")
            end = out.index("}", start) + 1
            out = out[:start] + slots[out[start:end]]() + out[end:]
        return out


TEMPLATES = {
    "fact": [
        "{project} runs on {tech} {num} behind {tech} in the {team} cluster",
        "The {team} team owns the {noun} service and the {noun} for {project}",
        "{name} is the on-call contact for {project} and lives in {place}",
        "Our {tech} {noun} for {project} listens on port {num}",
        "The {adj} {noun} in {project} is caused by the {tech} {noun}",
        "{project} stores every {noun} in {tech} with a {num} retention",
        "The {noun} budget for {project} is {num} per month",
    ],
    "preference": [
        "User prefers {tech} over {tech} for {area}",
        "{name} likes short answers and prefers {tech} for {area}",
        "User wants {noun}s summarised as bullet points, never as long prose",
        "User prefers meetings after {num} and hates {adj} {noun}s",
        "Always use {tech} instead of {tech} when writing {area}",
        "User likes to be reminded about the {noun} {when}",
    ],
    "decision": [
        "Decided to move {project} from {tech} to {tech} after the {adj} {noun} {when}",
        "We chose {tech} for the {noun} of {project} because it was {adj}",
        "The {team} team agreed to drop {tech} and keep {tech} for {area}",
        "{name} decided the {noun} for {project} ships {when}",
        "Agreed with {name} to cap the {noun} at {num} for {project}",
    ],
    "event": [
        "{name} from {team} reported {num} {noun}s in {project} {when}",
        "The {project} {noun} {verb} {when} after {name} {verb} the {noun}",
        "Incident: {tech} {noun} in {project} was {adj} for {num} {when}",
        "{name} {verb} the {tech} {noun} for {project} {when} in {place}",
        "Met {name} in {place} {when} to discuss the {project} {noun}",
    ],
    "observation": [
        "The {noun} of {project} gets {adj} whenever the {tech} {noun} is {adj}",
        "Builds of {project} take {num} longer on {tech} than on {tech}",
        "{name} tends to {verb} {noun}s without a {noun}",
    ],
    "task": [
        "TODO: {verb} the {noun} in {project} before {when}",
        "Remind {name} to send the {noun} for {project} {when}",
        "Follow up with the {team} team about the {adj} {noun} in {tech}",
    ],
    "person": [
        "{name} works on the {team} team in {place} and knows {tech} well",
        "{name} is the manager of {name} and owns {project}",
        "{name} joined {when} as a {tech} engineer on {project}",
    ],
}
CLAUSES = [
    "because the {noun} was {adj}",
    "according to {name}",
    "which broke the {noun} in {project}",
    "so the {team} team can {verb} the {noun}",
    "after {name} {verb} the {tech} {noun}",
    "and {name} wants a {noun} by {when}",
    "while the {tech} {noun} stays at {num}",
    "see the {noun} in {tech} for details",
    "unless the {noun} exceeds {num}",
    "as discussed with {name} from {team} {when}",
    "to keep the {noun} under {num}",
    "with {tech} {num} in {place}",
]


def _target_words(rng: random.Random) -> int:
    return max(8, min(40, int(round(math.exp(rng.gauss(math.log(17), 0.45))))))


def generate_corpus(n: int, seed: int = 42) -> Corpus:
    """``n`` synthetic memories; item i depends only on (seed, i's predecessors)."""
    rng = random.Random(seed)
    gen = _Gen(rng)
    types = [t for t, _ in NODE_TYPES]
    weights = [w for _, w in NODE_TYPES]
    texts, kinds, tags, created, agents = [], [], [], [], []
    for _ in range(n):
        kind = rng.choices(types, weights)[0]
        target = _target_words(rng)
        words = gen.fill(rng.choice(TEMPLATES[kind])).split()
        while len(words) < target:
            words += gen.fill(rng.choice(CLAUSES)).split()
        text = " ".join(words[:40])
        texts.append(text)
        kinds.append(kind)
        tags.append(rng.sample(TAGS, rng.choice((0, 1, 1, 2, 3))))
        created.append(EPOCH - timedelta(seconds=rng.randint(0, 400 * 86400)))
        agents.append(f"agent-{rng.randint(1, 8)}")
    return Corpus(texts, kinds, tags, created, agents, seed)


def _content_words(text: str) -> list[str]:
    words = [w.strip(".,:;") for w in text.split()]
    return [w for w in words if w and w.lower() not in STOP and re.search(r"[A-Za-z]", w)]


QUESTION_TEMPLATES = [
    "what did we decide about {a} and {b}?",
    "what does the user prefer for {a} {b}?",
    "who was involved with {a} {b} {c}?",
    "when did {a} happen with {b}?",
    "any notes on {a} {b} {c}?",
    "what do we know about {a} in {b}?",
    "why was {a} {b} changed?",
]


def generate_queries(corpus: Corpus, n: int, kind: str, seed: int = 7) -> list[tuple[str, int]]:
    """``n`` (query, target index) pairs of one kind: short, question or long."""
    rng = random.Random(f"{seed}:{kind}")
    out: list[tuple[str, int]] = []
    while len(out) < n:
        target = rng.randrange(len(corpus))
        words = _content_words(corpus.texts[target])
        if len(words) < 3:
            continue
        if kind == "short":
            q = " ".join(rng.sample(words, rng.choice((2, 3))))
        elif kind == "question":
            a, b, c = rng.sample(words, 3)
            q = rng.choice(QUESTION_TEMPLATES).format(a=a, b=b, c=c)
        elif kind == "long":
            picked = rng.sample(words, min(len(words), rng.randint(4, 7)))
            size = rng.randint(15, 30)
            filler = [rng.choice(FILLER) for _ in range(size - len(picked))]
            q = " ".join(filler[: len(filler) // 2] + picked + filler[len(filler) // 2 :])
        else:
            raise ValueError(kind)
        out.append((q, target))
    return out


def ingest_texts(n: int, seed: int = 4242) -> Corpus:
    """Fresh memories (a different seed) for ingest measurements."""
    return generate_corpus(n, seed=seed)


def corpus_stats(corpus: Corpus) -> dict[str, float]:
    lengths = sorted(len(t.split()) for t in corpus.texts)
    vocab = {w.lower() for t in corpus.texts for w in re.findall(r"\w+", t)}
    return {
        "n": len(corpus),
        "words_min": lengths[0],
        "words_p50": lengths[len(lengths) // 2],
        "words_mean": round(sum(lengths) / len(lengths), 1),
        "words_max": lengths[-1],
        "distinct_tokens": len(vocab),
    }


# --- embedding cache -----------------------------------------------------------
def _cache_paths(seed: int) -> tuple[Path, Path]:
    stem = CACHE_DIR / f"corpus-v{GENERATOR_VERSION}-seed{seed}"
    return stem.with_suffix(".npy"), stem.with_suffix(".json")


def embedded_corpus(
    n: int,
    embedder,
    *,
    seed: int = 42,
    log: Callable[[str], None] = print,
) -> tuple[Corpus, np.ndarray, dict[str, float]]:
    """The corpus of size n and its (n, dims) float32 vectors, cached under bench/.cache/.

    The cache holds the largest prefix embedded so far; only missing items are embedded.
    Returns (corpus, vectors, info) where info says how long embedding took this time.
    """
    npy, meta_path = _cache_paths(seed)
    cached = np.zeros((0, embedder.dims), dtype=np.float32)
    have = 0
    if npy.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        have = int(meta["n"])
    full = generate_corpus(max(n, have), seed)
    corpus = full.prefix(n)
    if have:
        if meta.get("model") == embedder.model_id and full.prefix(have).digest() == meta["digest"]:
            cached = np.load(npy, mmap_mode="r")
        else:
            log("  corpus cache does not match this generator/model; re-embedding")
    info: dict[str, float] = {"cached": float(min(len(cached), n)), "embedded": 0.0}
    if len(cached) >= n:
        return corpus, np.ascontiguousarray(cached[:n]), info
    missing = corpus.texts[len(cached) :]
    log(f"  embedding {len(missing)} corpus texts (cached: {len(cached)}) ...")
    parts = [np.asarray(cached)]
    t0 = time.perf_counter()
    step = 4096
    for start in range(0, len(missing), step):
        parts.append(embedder.embed(missing[start : start + step]))
        done = start + min(step, len(missing) - start)
        rate = done / (time.perf_counter() - t0)
        log(f"    {done}/{len(missing)} ({rate:.0f} texts/s)")
    seconds = time.perf_counter() - t0
    vectors = np.concatenate(parts).astype(np.float32)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = npy.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(npy)
    meta_path.write_text(
        json.dumps(
            {
                "n": n,
                "digest": corpus.digest(),
                "model": embedder.model_id,
                "seed": seed,
                "generator_version": GENERATOR_VERSION,
            }
        )
    )
    info.update(
        embedded=float(len(missing)),
        embed_seconds=round(seconds, 1),
        embed_rate=round(len(missing) / seconds, 1),
    )
    return corpus, vectors, info
