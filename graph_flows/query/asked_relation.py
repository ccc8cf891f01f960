"""The relation a question asks for: the words of its main clause, not of its nested ones.

A multi-hop question nests the relations it needs on the way inside the one it asks: "Who is
the *spouse* of the director of Jump for Glory?" asks for a spouse; "director" only leads to
the person whose spouse is asked; "When did the country containing Nugegoda *leave* the
British Empire?" asks when it left. An answer sentence that states a nested relation ("...
directed by Raoul Walsh") answers the way there (the bridge), not the question.

The main clause is read from spaCy's dependency parse (:func:`graph_flows.shared.nlp.load_nlp`):
the root verb (unless it is a form of "be"), and the root's object, attribute, complement,
particle, coordinated verb and passive subject (the subject too when the root is "be": the
"spouse" of "Who is the spouse of ..."), each with its adjectives and compounds. Relative
clauses, participle and prepositional modifiers are nested relations and left out. Only the
question's relation words (:func:`graph_flows.query.confidence.relation_words`) count; a
main clause that says none of them ("Who did X's team play ...?") asks no relation an answer
sentence could be checked against. Without the pipeline every relation word counts.
"""

from __future__ import annotations

from typing import Any

from graph_flows.query import answer_kind, extractive

_MAIN = frozenset({"dobj", "attr", "acomp", "prt", "oprd", "xcomp", "dative", "nsubjpass",
                   "conj", "ccomp"})
"""The root's dependents that belong to the main clause."""
_MODIFIERS = frozenset({"amod", "compound"})
_BE = frozenset({"be", "is", "was", "are", "were", "been", "being", "'s", "am"})


def main_relation(query: str, relation: frozenset[str], doc: Any = None) -> frozenset[str]:
    """The stems of ``relation`` (the question's relation words) that its main clause says
    (see the module docstring; ``doc``: the question's parse, when already made); all of
    ``relation`` without the pipeline."""
    if not relation:
        return relation
    doc = doc if doc is not None else answer_kind.parse([query])[0]
    if doc is None:
        return relation
    roots = [t for t in doc if t.dep_ == "ROOT"]
    if not roots:
        return relation
    root = roots[0]
    copula = answer_kind.pos(root) == "AUX" or root.text.lower() in _BE
    heads = [] if copula else [root]
    heads += [c for c in root.children
              if c.dep_ in _MAIN or (copula and c.dep_ == "nsubj")]
    words = [*heads, *(g for h in heads for g in h.children if g.dep_ in _MODIFIERS)]
    return frozenset(extractive.stem(t.text) for t in words) & relation
