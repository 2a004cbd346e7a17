"""The registry of every source membench knows, mirrored or not (SPEC section 4).

``bench/corpus_sources.py`` prints this table; ``membench build`` runs the adapters of the
sources whose folder is present under the corpus root. A source that is not mirrored keeps its
entry, its adapter (tested on a fixture in the real upstream format) and shows as
"not mirrored" in coverage and reports.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from .base import AdapterResult, Coverage


@dataclass(frozen=True)
class SourceSpec:
    key: str  # prefix of source_id and query_id
    name: str
    modality: str
    folder: str  # folder under the corpus root
    upstream: str  # upstream repository / dataset
    annotation_source: str  # who annotated, how
    license: str
    adapter: str  # "module:function" under membench.sources
    scenario: str
    mirrored: bool  # present in the mirror this project is built against
    # who appears in the data and what of them it may carry (the dataset card's
    # personalSensitiveInformation; from the mirror's LICENSE-NOTES.md and the upstream papers)
    personal_data: str = ""

    def load(self, corpus_root: Path) -> AdapterResult:
        mod, fn = self.adapter.split(":")
        return getattr(importlib.import_module(f"membench.sources.{mod}"), fn)(corpus_root)

    def available(self, corpus_root: Path) -> bool:
        return (Path(corpus_root) / self.folder).is_dir()

    def not_mirrored(self) -> Coverage:
        cov = Coverage(source=self.key, mirrored=False)
        cov.notes.append(f"{self.name} is not in the corpus mirror: not covered, never run")
        return cov


SOURCES: tuple[SourceSpec, ...] = (
    SourceSpec(
        key="mmlongbench",
        name="MMLongBench-Doc",
        modality="pdf",
        folder="mmlongbench-doc",
        upstream="https://github.com/mayubo2333/MMLongBench-Doc",
        annotation_source="expert annotators (Ma et al., NeurIPS 2024 D&B): question, answer, "
        "evidence_pages (1-based) per long PDF; 'Not answerable' marks unanswerable questions",
        license="CC BY-NC 4.0 (data); documents keep their own copyrights",
        adapter="mmlongbench:load",
        scenario="document-qa",
        mirrored=True,
        personal_data="published documents (research reports, papers, company filings, brochures, "
        "guides): they name real people only as their publications do",
    ),
    SourceSpec(
        key="locomo",
        name="LoCoMo",
        modality="conversation",
        folder="locomo",
        upstream="https://github.com/snap-research/LoCoMo",
        annotation_source="human-verified QA over very long multi-session dialogues (Maharana et "
        "al., ACL 2024); evidence = dialogue turn ids D<session>:<turn>; category 5 adversarial",
        license="CC BY-NC 4.0",
        adapter="locomo:load",
        scenario="dialogue-memory",
        mirrored=True,
        personal_data="dialogues between LLM agents with invented personas, edited by annotators; "
        "no real person's chats",
    ),
    SourceSpec(
        key="codesearchnet",
        name="CodeSearchNet expert annotations",
        modality="code",
        folder="codesearchnet",
        upstream="https://github.com/github/CodeSearchNet",
        annotation_source="expert relevance judgments 0-3 for 99 natural-language queries "
        "(Husain et al., 2019, annotationStore.csv); function spans from GitHubUrl #Lstart-Lend",
        license="MIT (annotations); each file keeps its repository's license",
        adapter="codesearchnet:load",
        scenario="code-search",
        mirrored=True,
        personal_data="open-source code from public GitHub repositories: comments and headers may "
        "carry authors' names or e-mail addresses",
    ),
    SourceSpec(
        key="screenspot",
        name="ScreenSpot-v2",
        modality="ui_screenshot",
        folder="screenspot-v2",
        upstream="https://huggingface.co/datasets/OS-Copilot/ScreenSpot-v2",
        annotation_source="human-corrected GUI grounding boxes (OS-Atlas, Wu et al., 2024) over "
        "ScreenSpot (SeeClick); bbox = [left, top, width, height] px",
        license="Apache-2.0 (dataset card)",
        adapter="screenspot:load",
        scenario="gui-grounding",
        mirrored=True,
        personal_data="screenshots of apps and web pages: whatever text was on screen when taken",
    ),
    SourceSpec(
        key="medvidqa",
        name="MedVidQA",
        modality="video",
        folder="medvidqa",
        upstream="https://github.com/deepaknlp/MedVidQACL",
        annotation_source="medical experts' answer spans in instructional videos (Gupta et al., "
        "2022, NLM): answer_start_second / answer_end_second",
        license="not stated upstream; research evaluation only",
        adapter="medvidqa:load",
        scenario="instructional-video-qa",
        mirrored=True,
        personal_data="public medical instructional videos (not mirrored: captions and URLs "
        "only); health topics, no patient records",
    ),
    SourceSpec(
        key="tabmwp",
        name="TabMWP (test1k)",
        modality="image",
        folder="tabmwp",
        upstream="https://github.com/lupantech/PromptPG",
        annotation_source="math word problems written over one table image each (Lu et al., "
        "ICLR 2023); the question's image is its gold",
        license="CC BY-NC-SA 4.0",
        adapter="tabmwp:load",
        scenario="table-image-qa",
        mirrored=True,
        personal_data="math word problems over tables; the people they name are characters of the "
        "problems",
    ),
    SourceSpec(
        key="finchart",
        name="FinChart-Bench",
        modality="image",
        folder="finchart-bench",
        upstream="https://github.com/Tizzzzy/FinChart-Bench",
        annotation_source="QA pairs written over one financial chart image each; the question's "
        "image is its gold",
        license="no license upstream: all rights reserved, research evaluation only",
        adapter="finchart:load",
        scenario="chart-image-qa",
        mirrored=True,
        personal_data="financial charts (markets, companies); no personal data",
    ),
    # ---- conversation and video sources mapped with holders of their own (docs/sets.md,
    # ---- "Per source").
    SourceSpec(
        key="prefeval",
        name="PrefEval",
        modality="conversation",
        folder="prefeval",
        upstream="https://github.com/amazon-science/PrefEval",
        annotation_source="1,000 user preferences over 20 topics, each with a later question "
        "whose generic answer would violate it (Zhao et al., ICLR 2025); explicit, choice-based "
        "(aligned_op) and persona-driven forms",
        license="CC BY-NC 4.0",
        adapter="prefeval:load",
        scenario="preference-memory",
        mirrored=True,
        personal_data="user preferences, questions and persona conversations written for the "
        "benchmark; no real user's chats",
    ),
    SourceSpec(
        key="realtalk",
        name="REALTALK",
        modality="conversation",
        folder="realtalk",
        upstream="https://github.com/danny911kr/REALTALK",
        annotation_source="questions with evidence dialogue turn ids over 10 real 21-day "
        "conversations between people (Lee et al., 2025), LoCoMo's format; evidence by dia_id",
        license="no license upstream: research evaluation only",
        adapter="realtalk:load",
        scenario="dialogue-memory",
        mirrored=True,
        personal_data="real people's private messaging conversations over about 21 days: their "
        "names (file names and in-chat names), daily lives and plans; the photos they shared are "
        "not mirrored",
    ),
    SourceSpec(
        key="pstuts",
        name="PsTuts-VQA",
        modality="video",
        folder="pstuts-vqa",
        upstream="https://github.com/mbudisic/pstuts-rag",
        annotation_source="17,768 questions written by three image-editing experts while "
        "watching 76 narrated tutorials (Zhao et al., 2021); each names the transcript sentence "
        "(sent_id) whose begin/end give the gold span",
        license="CC BY-NC 4.0",
        adapter="pstuts:load",
        scenario="instructional-video-qa",
        mirrored=True,
        personal_data="narrated Photoshop tutorials (not mirrored: transcripts and URLs only); no "
        "personal data beyond the narrators' words",
    ),
    # ---- in the design, not in this mirror: adapters read the real upstream format and are
    # ---- tested on fixtures; builds report them as not mirrored.
    SourceSpec(
        key="visrag",
        name="VisRAG retrieval qrels",
        modality="image",
        folder="visrag",
        upstream="https://huggingface.co/openbmb (VisRAG-Ret-Test-* datasets)",
        annotation_source="query -> corpus image qrels shipped with VisRAG's retrieval test sets",
        license="per test set (see dataset cards)",
        adapter="visrag:load",
        scenario="image-retrieval",
        mirrored=False,
    ),
    SourceSpec(
        key="videomme",
        name="Video-MME",
        modality="video",
        folder="video-mme",
        upstream="https://huggingface.co/datasets/lmms-lab/Video-MME",
        annotation_source="expert multiple-choice QA over YouTube videos (Fu et al., 2024)",
        license="research use only (dataset card)",
        adapter="videomme:load",
        scenario="video-qa",
        mirrored=False,
    ),
    SourceSpec(
        key="longmemeval",
        name="LongMemEval",
        modality="conversation",
        folder="longmemeval",
        upstream="https://github.com/xiaowu0162/LongMemEval",
        annotation_source="human-curated questions over chat histories with answer_session_ids "
        "and has_answer turns (Wu et al., ICLR 2025); '_abs' questions are abstention items",
        license="MIT",
        adapter="longmemeval:load",
        scenario="chat-assistant-memory",
        mirrored=False,
    ),
)

BY_KEY: dict[str, SourceSpec] = {s.key: s for s in SOURCES}


def spec_for_folder(folder: str) -> SourceSpec | None:
    return next((s for s in SOURCES if s.folder == folder), None)
