"""The five papers mpdp implements: the one table of their citations.

Code, docstrings and notebooks refer to a paper by its number and short citation, e.g. "paper 003 (Jayaraman et
al., NeurIPS 2018), section 3.2", and point here for the full reference (:data:`PAPERS`); the documentation's
"Papers" page is built from this table. ``tests/learning/test_papers.py`` checks that the learning packages and
the tutorials cite each paper as written here.

Titles and author lists are as printed in the papers (paper 002's copy has no title page: its authors are from
its arXiv listing). Venues and years are the publications': papers 003 and 004 print theirs; paper 000 is the
IEEE BigData 2021 version of arXiv:1911.04587, paper 001 appeared at SecureComm 2018, paper 002 is arXiv
preprint 2010.09293 (2020).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mpdp.errors import ParameterError, explain

__all__ = ["PAPERS", "Paper", "paper"]


@dataclass(frozen=True)
class Paper:
    """One paper: its number in mpdp, its citation, and the learning package that implements it.

    ``authors`` are (given names, family name) pairs; ``venue`` the full name of where it appeared and ``where``
    the short one.
    """

    number: str  # "000" .. "004"
    authors: tuple[tuple[str, str], ...]
    title: str
    venue: str
    where: str  # e.g. "NeurIPS"
    year: int
    link: str | None  # DOI or arXiv address, when there is one
    package: str  # the mpdp.learning package

    @property
    def short(self) -> str:
        """Author-year form, e.g. ``Jayaraman et al., NeurIPS 2018``."""
        family = [f for _, f in self.authors]
        who = family[0] if len(family) == 1 else (
            f"{family[0]} and {family[1]}" if len(family) == 2 else f"{family[0]} et al.")
        return f"{who}, {self.where} {self.year}"

    @property
    def citation(self) -> str:
        """The full reference: authors, "title", venue, year[, link]."""
        names = [f"{g} {f}" for g, f in self.authors]
        who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"
        link = f" {self.link}" if self.link else ""
        return f'{who}. "{self.title}". {self.venue}, {self.year}.{link}'


#: Every paper by its number.
PAPERS: Mapping[str, Paper] = {
    "000": Paper("000", (("Depeng", "Xu"), ("Shuhan", "Yuan"), ("Xintao", "Wu")),
                 "Achieving Differential Privacy in Vertically Partitioned Multiparty Learning",
                 "IEEE International Conference on Big Data", "IEEE BigData", 2021,
                 "https://doi.org/10.1109/BigData52589.2021.9671502 (arXiv:1911.04587)",
                 "mpdp.learning.functional_mechanism"),
    "001": Paper("001", (("Wei", "Du"), ("Ang", "Li"), ("Qinghua", "Li")),
                 "Privacy-Preserving Multiparty Learning For Logistic Regression",
                 "International Conference on Security and Privacy in Communication Networks", "SecureComm", 2018,
                 None, "mpdp.learning.ofpa_ofaa"),
    "002": Paper("002", (("Razane", "Tajeddine"), ("Joonas", "Jälkö"), ("Samuel", "Kaski"), ("Antti", "Honkela")),
                 "Privacy-preserving Data Sharing on Vertically Partitioned Data", "arXiv preprint", "arXiv", 2020,
                 "https://arxiv.org/abs/2010.09293", "mpdp.learning.dpvi"),
    "003": Paper("003", (("Bargav", "Jayaraman"), ("Lingxiao", "Wang"), ("David", "Evans"), ("Quanquan", "Gu")),
                 "Distributed Learning without Distress: Privacy-Preserving Empirical Risk Minimization",
                 "Advances in Neural Information Processing Systems 31", "NeurIPS", 2018,
                 "http://papers.nips.cc/paper/7871-distributed-learning-without-distress-privacy-preserving-"
                 "empirical-risk-minimization", "mpdp.learning.distributed_erm"),
    "004": Paper("004", (("Ferdinando", "Fioretto"), ("Pascal", "Van Hentenryck")),
                 "Privacy-Preserving Federated Data Sharing",
                 "18th International Conference on Autonomous Agents and Multiagent Systems", "AAMAS", 2019, None,
                 "mpdp.learning.pfds"),
}


def paper(number: str) -> Paper:
    """The paper numbered ``number`` ("000" .. "004")."""
    if number not in PAPERS:
        raise ParameterError(explain("paper", number, f"one of {sorted(PAPERS)}", "see mpdp.learning.papers"))
    return PAPERS[number]
