"""Run context of the query graph (editable per run, shown in LangGraph Studio)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(kw_only=True)
class QueryContext:
    """Models, limits, thresholds and the search split. Per-run values beat settings."""

    analysis_model: str | None = field(default=None, metadata={
        "description": "Model for query analysis (default: KRAG_EXTRACTION_MODEL or chat)."})
    answer_model: str | None = field(default=None, metadata={
        "description": "Model for the answer (default: KRAG_CHAT_MODEL). 'none' = no-LLM."})
    entity_limit: int = field(default=15, metadata={"description": "Entities to retrieve."})
    fact_limit: int = field(default=20, metadata={"description": "Facts to retrieve."})
    like_share: float = field(default=0.6, metadata={
        "description": "Share of each limit for SQL LIKE hits; the rest goes to trigram."})
    fallback_ratio: float = field(default=0.5, metadata={
        "description": "Vector search fills up when LIKE+trigram found under this share."})
    trigram_threshold: float = field(default=0.1, metadata={
        "description": "Minimum pg_trgm similarity of a fuzzy name hit."})
    recipe: str = field(default="ppr", metadata={
        "description": "Ranking recipe: 'ppr' (default: the split candidates plus passages "
                       "and facts linked to the question by embedding, ranked by "
                       "personalized PageRank over entities and passages; without chunk "
                       "embeddings it runs 'split' with a notice), 'split' (the seed's "
                       "LIKE/trigram share + vector fallback) or 'rrf' (LIKE, trigram, "
                       "summary and vector fused by Reciprocal Rank Fusion, near-duplicate "
                       "facts dropped by MMR)."})
    passage_tokens: int = field(default=1500, metadata={
        "description": "Token budget of the <passages> section (recipe 'ppr')."})
    max_hops: int = field(default=2, metadata={
        "description": "Graph expansion of recipes 'split' and 'rrf': facts up to this many "
                       "hops (1-3) from the entities the question names join the ranking (a "
                       "bounded recursive CTE); 1 = only facts touching retrieved entities. "
                       "Recipe 'ppr' reaches further hops by PageRank over its "
                       "neighbourhood instead."})
    max_diagram_nodes: int = field(default=12, metadata={
        "description": "Most nodes in the answer's Mermaid diagram (its evidence chain: the "
                       "answer, the cited facts, the question's entities and the labelled "
                       "paths between them, in that order)."})
    analysis_temperature: float = field(default=0.1, metadata={"description": "Analysis."})
    answer_temperature: float = field(default=0.3, metadata={"description": "Answer."})
    max_rounds: int | None = field(default=None, metadata={
        "description": "Retrieval rounds (1-4; default KRAG_MAX_ROUNDS, 2): after each "
                       "round assess_evidence decides whether the evidence is enough or "
                       "asks a follow-up sub-question (the planner model; without one, the "
                       "no-LLM follow-up when on). "
                       "1 turns the loop off. The request deadline ends it too."})
    planner_model: str | None = field(default=None, metadata={
        "description": "Model that assesses the evidence and plans follow-up rounds "
                       "(default: the analysis model). 'none' = no planner."})
    no_llm_follow_up: bool = field(default=True, metadata={
        "description": "Without a planner model, run a follow-up round when part of the "
                       "question is not covered by the top passages and a bridge entity "
                       "leads on; it brings in its best new document only (measured in "
                       "docs/bench/HISTORY.md, issue 24). False: one round without a planner."})
    generate_answer: bool = field(default=True, metadata={
        "description": "Run the answer step. False ends the run after build_context: the "
                       "retrieved entities and facts with their context sections, no answer "
                       "model (the MCP tool kag_query runs the graph this way)."})
