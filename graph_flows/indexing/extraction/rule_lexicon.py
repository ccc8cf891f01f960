"""Word lists and verb patterns of the rule-based extractor (data only, no logic).

The lists are deliberately small and generic: they steer type guesses and relation labels,
they are not a gazetteer. Extend them here, not in the extractor.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    """A frozenset of the whitespace-separated words of ``text``."""
    return frozenset(text.split())


STOPWORDS = _words(
    """a an the this that these those there here it its it's he she they we you i me my our
    your his her their them us one some any each every all both either neither no not none
    and or but nor so yet for if then than when where while whereas because since although
    though unless until after before once however therefore thus hence moreover furthermore
    also indeed instead meanwhile nevertheless nonetheless otherwise still yes in on at by
    to from with without within into onto upon of off over under above below about across
    against along among around as between beyond during except inside near outside per via
    what which who whom whose why how many much more most less few several such other another
    same own only just even very quite rather almost already always never often sometimes
    usually perhaps maybe first second third next last finally today yesterday tomorrow now
    later soon again is are was were be been being do does did has have had can could may
    might must shall should will would let see note figure table example chapter section
    step part page monday tuesday wednesday thursday friday saturday sunday january february
    march april may june july august september october november december mr mrs ms dr prof
    sir since unlike like given using based according despite"""
)
"""Words never taken as an entity on their own (compared lowercased)."""

TITLES = _words("Mr Mrs Ms Miss Dr Prof Professor Sir Dame Lady Lord Madam Rev Captain Gen")
"""Personal titles: the capitalised words after them name a person."""

CONNECTORS = _words("of de da del della der den van von la le du al bin y")
"""Lowercase words allowed inside a multi-word name ("University of Cambridge")."""

ORG_WORDS = _words(
    """Inc Inc. Corp Corp. Corporation Company Co Co. Ltd Ltd. LLC GmbH AG SA PLC Group
    University Institute Foundation Association Agency Laboratory Laboratories Labs Lab
    Society Council Committee Ministry Department Bank College School Academy Organization
    Organisation Federation Union Party Commission Bureau Board Press Studios Records
    Technologies Systems Software Consortium Trust Authority Office Club Team Museum Hospital"""
)
"""A name containing one of these words is an organization."""

LOCATION_WORDS = _words(
    """City County River Mountain Mountains Mount Lake Island Islands Street Avenue Road
    Province State Valley Ocean Sea Bay Republic Kingdom Peninsula Desert Forest Park
    Region District Village Town Coast Gulf Strait Canyon Square"""
)
"""A name ending with one of these words is a location."""

TECH_WORDS = _words(
    """Engine Machine Computer Language Framework Library Database Protocol Platform Server
    Compiler Interpreter API SDK Toolkit Kernel Browser Processor Chip Algorithm Network
    Runtime Editor Format Standard Model Device Calculator"""
)
"""A name ending with one of these words is a technology."""

KNOWN_TECH = _words(
    """Python Java JavaScript TypeScript Rust Go Golang Ruby Perl Haskell Scala Kotlin Swift
    Linux Unix Windows macOS Android iOS Docker Kubernetes PostgreSQL Postgres MySQL SQLite
    Redis MongoDB Elasticsearch Kafka Spark Hadoop React Angular Vue Django Flask FastAPI
    NumPy Pandas PyTorch TensorFlow LangChain LangGraph Ollama Git GitHub Excel Fortran
    COBOL Lisp Prolog Pascal"""
)
"""Well-known technology names (single words)."""

TECH_ACRONYMS = _words(
    """AI ML LLM LLMs NLP API APIs GPU GPUs CPU CPUs TPU RAM ROM SSD HDD OS SQL NoSQL HTTP HTTPS
    HTML CSS JSON XML YAML PDF CSV URL URI TCP UDP IP DNS SSH TLS SSL REST RPC SDK CLI GUI
    IDE RAG KG NER OCR JVM VM AWS GCP USB LAN WAN VPN CRM ERP ORM"""
)
"""Acronyms that name technologies."""

ORG_ACRONYMS = _words(
    """NASA IBM MIT CERN NATO UN EU FBI CIA NSA BBC CNN NHS WHO UNESCO UNICEF IMF OECD
    WTO IEEE ACM ISO W3C IETF DARPA NIST ESA MoMA UCLA NYU CMU ETH EPFL AT&T HP AMD"""
)
"""Acronyms that name organizations."""

FIRST_NAMES = _words(
    """Ada Alan Albert Alice Ana Anna Andrew Ann Anne Barbara Ben Bill Bob Carl Carlos
    Charles Charlotte Chris Claude Daniel David Donald Edward Elizabeth Emily Emma Eric
    Frank Fred George Grace Hannah Harry Helen Henry Isaac Jack James Jane Jean Jennifer
    John Joseph Juan Julia Karen Kate Katherine Laura Linda Linus Lisa Margaret Maria Marie
    Mark Mary Michael Nancy Nicholas Olivia Paul Peter Richard Robert Sam Sarah Sophie
    Steve Steven Susan Thomas Tim Tom Victoria William Wei Yuki Ahmed Mohammed Ali Fatima
    Ivan Olga Hans Pierre Giovanni Luca Marco Guido Dennis Ken Bjarne Tim Vint Larry Sergey"""
)
"""Common first names: a 2-3 word name starting with one is a person."""

LOCATION_CUE = (
    r"\b(?:located|based|headquartered|born|situated|lives|lived|living|grew\s+up|settled|"
    r"moved|died|resides|resided)\s+(?:in|at|near|to)\s+(?:the\s+)?$"
)
"""Text right before a name that makes it a location."""

PERSON_CUE = r"^(?:'s)?\s*(?:was\s+born|said|says|wrote|died|married|argued|claimed)\b"
"""Text right after a 2-3 word name that makes it a person."""

ADVERBS = (
    r"(?:also|mainly|primarily|largely|heavily|originally|later|first|still|now|then|"
    r"directly|extensively|widely|often|usually|typically|internally|only)"
)
DETERMINERS = r"(?:the|a|an|its|his|her|their|several|many|some|various|multiple|two|three)"

_BE = r"(?:is|was|are|were|has\s+been|had\s+been)"

ATTRIBUTE_PATTERNS: tuple[tuple[str, str, bool, float, str], ...] = (
    # (verb phrase regex, relation type, swapped, confidence, single-valued attribute of the
    # subject): checked before VERB_PATTERNS, so a newer fact supersedes an older one.
    (_BE + r"\s+(?:now\s+)?(?:headquartered|based)\s+in|moved\s+(?:its\s+)?headquarters\s+to",
     "relates_to", False, 0.7, "headquarters"),
    (_BE + r"\s+(?:acquired|bought|purchased|owned)\s+by", "relates_to", False, 0.7, "owner"),
    (_BE + r"\s+(?:led|headed|run)\s+by", "relates_to", False, 0.7, "leader"),
    (_BE + r"\s+(?:maintained|stewarded)\s+by", "relates_to", False, 0.7, "maintainer"),
    (_BE + r"\s+(?:licensed|released|distributed)\s+under", "relates_to", False, 0.7,
     "license"),
)
"""Verb phrases that set a one-at-a-time property of the subject ("X is headquartered in Y",
"X was acquired by Y": Y is X's owner; subject and object keep the sentence's order)."""

YEAR = (r"\b(?:in|since|from|as\s+of|by|on|until)\s+(?:(?:early|mid|late)\s+)?"
        r"(?:(?:January|February|March|April|May|June|July|August|September|October|November|"
        r"December)\s+(?:\d{1,2},?\s+)?)?(?P<year>1[0-9]{3}|20[0-9]{2})\b")
"""A year the sentence dates itself with ("in 1996", "since March 2021")."""

VERB_PATTERNS: tuple[tuple[str, str, bool, float], ...] = (
    # (verb phrase regex, relation type, subject/object swapped, confidence)
    (
        r"uses|used|utili[sz]es|utili[sz]ed|employs|employed|leverages|leveraged|relies\s+on|"
        r"relied\s+on|depends\s+on|depended\s+on|runs\s+on|ran\s+on|requires|required|"
        + _BE
        + r"\s+(?:built\s+(?:with|on)|written\s+in|implemented\s+in|powered\s+by|based\s+on)",
        "uses",
        False,
        0.8,
    ),
    (_BE + r"\s+(?:used|utili[sz]ed|employed|leveraged|required)\s+by", "uses", True, 0.75),
    (
        _BE + r"\s+(?:an?\s+)?(?:part|component|module|member|subsidiary|division|subset|"
        r"element)\s+of|belongs\s+to|belonged\s+to|" + _BE + r"\s+(?:contained|included)\s+in",
        "part_of",
        False,
        0.8,
    ),
    (
        r"contains|contained|includes|included|comprises|comprised|consists\s+of|"
        r"consisted\s+of|" + _BE + r"\s+(?:made\s+(?:up\s+)?of|composed\s+of)",
        "contains",
        False,
        0.8,
    ),
    (
        _BE + r"\s+(?:defined\s+as|called|known\s+as)|defines|defined|means|denotes",
        "defines",
        False,
        0.8,
    ),
    (r"refers\s+to|referred\s+to|cites|cited|mentions|mentioned", "mentions", False, 0.75),
    (
        _BE + r"\s+(?:founded|co-?founded|created|invented|developed|designed|built|written|"
        r"authored|acquired|owned|led|funded|proposed|introduced|published|described|"
        r"directed|produced|discovered)\s+by",
        "relates_to",
        True,
        0.7,
    ),
    (
        r"works\s+(?:for|at|with)|worked\s+(?:for|at|with)|collaborated\s+with|founded|"
        r"co-?founded|created|invented|developed|designed|built|wrote|authored|married|"
        + _BE
        + r"\s+(?:located|based|headquartered|born|situated)\s+in|acquired|owns|owned|leads|"
        r"led|joined|studied\s+(?:at|under)|taught\s+at|met|" + _BE + r"\s+associated\s+with|"
        r"proposed|introduced|published|funded|sponsored|replaced|succeeded|influenced|"
        r"described|directed|produced|discovered",
        "relates_to",
        False,
        0.7,
    ),
)
"""Verb phrases linking two names in one sentence, most specific first."""

OBJECT_PHRASE_TYPES = frozenset({"uses", "contains", "part_of", "defines"})
"""Relation types whose object may be a lowercase noun phrase ("uses punched cards")."""

OBJECT_STOP = _words(
    """and or but to for with in on at by from that which who as when while because than
    is are was were into via so if of since until unless whose where"""
)
"""Words that end a lowercase object phrase."""
