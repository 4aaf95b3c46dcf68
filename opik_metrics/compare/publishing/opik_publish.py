"""Write a publication (``compare/publishing/publication.py``) into Opik through its SDK: each experiment's
experiment scores and metadata key, and the comparison's dashboard (its table, a leaderboard of the
compared experiments, a chart of the differences). Scores someone else logged are kept (read, merge,
write); everything an earlier publish wrote is replaced, names it no longer has removed; values are
compared as the server stores them, so publishing the same comparison twice writes nothing the
second time. A refused write is one line saying which experiments already carry the new comparison
and which do not.
"""
from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import opik
from opik.rest_api.types.experiment_score import ExperimentScore

from opik_metrics.compare.model import Comparison
from opik_metrics.compare.publishing.publication import METADATA_KEY, same_stored
from opik_metrics.compare.reading.sources import opik_experiment, require_pushed
from opik_metrics.experiments.opik_server import OpikServerError, answer_failure

_WIDGET_NAMESPACE = uuid.UUID("6f1d3c2e-5b7a-4e2f-9c1d-0a8b7e6f5d4c")


@dataclass
class PublishReport:
    """What a publish did: the dashboard's id, and per experiment whether it was written and which
    of the comparison's names were kept as someone else logged them, with a different value."""

    dashboard_id: str
    dashboard_changed: bool
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept: dict[str, dict[str, list[float]]] = field(default_factory=dict)   # experiment -> name -> [theirs, ours]


@dataclass
class _Target:
    name: str
    id: str
    scores: list[tuple[str, float]]
    metadata: dict


def _find_experiment(client: Any, name: str, project_name: str | None) -> _Target:
    experiment = opik_experiment(client, name, project_name)
    data = experiment.get_experiment_data()
    scores = [(s.name, s.value) for s in data.experiment_scores or [] if s.name is not None]
    metadata = copy.deepcopy(data.metadata) if isinstance(data.metadata, dict) else {}
    return _Target(name=name, id=experiment.id, scores=scores, metadata=metadata)


def _merge(target: _Target, plan: Mapping[str, Any], dashboard: dict) -> tuple[list[tuple[str, float]], dict, dict]:
    """The experiment's scores and metadata after publishing ``plan`` on it, and the plan's names
    it leaves as someone else logged them (name -> [their value, ours]).

    A score is ours to replace only while it holds the value an earlier publish wrote (recorded in
    the metadata), compared as the server stores values (to 9 decimals); any other score is kept.
    Ours that the plan no longer has are removed; one already holding the plan's value is left as
    the server holds it, so publishing the same comparison again changes nothing."""
    previous = (target.metadata.get(METADATA_KEY) or {}).get("published_scores")
    previous = previous if isinstance(previous, dict) else {}
    held = dict(target.scores)
    mine = {n for n, v in target.scores if n in previous and same_stored(v, previous[n])}
    foreign = [(n, v) for n, v in target.scores if n not in mine]
    theirs = dict(foreign)
    ours = {n: v for n, v in plan["experiment_scores"].items() if n not in theirs}
    kept = {n: [theirs[n], v] for n, v in plan["experiment_scores"].items()
            if n in theirs and not same_stored(theirs[n], v)}
    record = {**plan["metadata"], "published_scores": ours,
              "dashboard": {**plan["metadata"]["dashboard"], **dashboard}}
    if kept:
        record["kept_existing_scores"] = kept
    written = [(n, held[n] if n in mine and same_stored(held[n], v) else v) for n, v in ours.items()]
    return foreign + written, {**target.metadata, METADATA_KEY: record}, kept


def _widget_id(dashboard_name: str, role: str) -> str:
    """A widget id fixed by the dashboard's name, so the same comparison gives the same config."""
    return str(uuid.uuid5(_WIDGET_NAMESPACE, f"{dashboard_name}/{role}"))


def _experiments_filter(ids: Sequence[str]) -> list[dict[str, Any]]:
    """The widget filter that narrows it to ``ids``: apps/opik-frontend/src/lib/filters.ts,
    ``extractExperimentIdsFilter`` reads the comma-joined value of the filter on ``experiment_ids``."""
    return [{"id": "opik-metrics-compared-experiments", "field": "experiment_ids", "type": "string", "operator": "in",
             "key": "", "value": ",".join(ids)}]


def _chosen_experiments(ids: Sequence[str]) -> dict[str, Any]:
    # What other frontend versions read, not modelled by the SDK's config classes:
    # apps/opik-frontend/src/types/dashboard.ts (ExperimentsLeaderboardWidgetType): a widget's own experiments.
    return {"overrideDefaults": True, "dataSource": "select_experiments", "experimentIds": list(ids)}


def dashboard_sections(spec: Mapping[str, Any], experiment_ids: Sequence[str]) -> list[dict]:
    """One section: the comparison's markdown table; a leaderboard of the compared experiments
    (``experiment_ids``, the baseline first) with the compared scores as columns, ranked by one of
    them in its direction; a bar chart of the differences to the baseline (one bar per system)."""
    d = opik.dashboard
    name = spec["name"]
    table, board, chart = (_widget_id(name, role) for role in ("table", "leaderboard", "differences"))
    ranking = spec["ranking_metric"]
    leaderboard = d.ExperimentLeaderboardConfig(
        selected_columns=spec["leaderboard_columns"], scores_columns_order=spec["leaderboard_columns"],
        enable_ranking=ranking is not None, ranking_metric=ranking,
        ranking_direction=spec["ranking_higher_is_better"], filters=_experiments_filter(experiment_ids)).to_jsonable()
    widgets = [d.DashboardWidget(type=d.WidgetType.TEXT_MARKDOWN.value, id=table, title="Is the difference real?",
                                 config=d.TextMarkdownConfig(content=spec["markdown"]).to_jsonable()),
               d.DashboardWidget(type=d.WidgetType.EXPERIMENT_LEADERBOARD.value, id=board, title="Leaderboard",
                                 config={**leaderboard, **_chosen_experiments(experiment_ids)})]
    layout = [d.DashboardLayoutItem(i=table, x=0, y=0, w=6, h=8), d.DashboardLayoutItem(i=board, x=0, y=8, w=6, h=5)]
    if spec["difference_chart"]:
        bars = d.ExperimentsFeedbackScoresConfig(chart_type=d.ChartType.BAR.value,
                                                 feedback_scores=spec["difference_chart"],
                                                 filters=_experiments_filter(experiment_ids[1:])).to_jsonable()
        widgets.append(d.DashboardWidget(type=d.WidgetType.EXPERIMENTS_FEEDBACK_SCORES.value, id=chart,
                                         title="Difference to the baseline (scaled as each name says)",
                                         config={**bars, **_chosen_experiments(experiment_ids[1:])}))
        layout.append(d.DashboardLayoutItem(i=chart, x=0, y=13, w=6, h=6))
    section = d.DashboardSection(title="Comparison", id=_widget_id(name, "section"), widgets=widgets, layout=layout)
    return [section.to_jsonable()]


def _publish_dashboard(client: Any, spec: Mapping[str, Any], experiment_ids: Sequence[str],
                       project_name: str | None) -> tuple[Any, bool]:
    sections = dashboard_sections(spec, experiment_ids)
    found = [b for b in client.get_dashboards(name=spec["name"]) if b.name == spec["name"]]
    if found:
        board, changed = found[0], False
        if board.description != spec["description"]:
            board.set_description(spec["description"])
            changed = True
        if board.config.get("sections") != sections:
            board.replace_sections(sections)
            changed = True
        return board, changed
    return client.create_dashboard(name=spec["name"], type=opik.dashboard.DashboardType.EXPERIMENTS.value,
                                   description=spec["description"], project_name=project_name,
                                   sections=sections), True


def publish(publication: Mapping[str, Any], client: Any, *, project_name: str | None = None,
            url: str | None = None) -> PublishReport:
    """Write ``publication`` through ``client`` (an ``opik.Opik``). Every experiment is read before
    anything is written; the dashboard is written first, then each experiment in one update.

    Raises OpikServerError (one line) when an experiment is missing or ambiguous, or when the server
    refuses a write; the message names the experiments already published and those left to do.
    """
    names = list(publication["experiments"])
    doing = "reading the experiments to publish the comparison on"
    try:
        targets = [_find_experiment(client, name, project_name) for name in names]
        doing = f"the comparison's dashboard {publication['dashboard']['name']!r}"
        board, changed = _publish_dashboard(client, publication["dashboard"], [t.id for t in targets], project_name)
    except OpikServerError:
        raise
    except Exception as exc:
        failure = answer_failure(exc, url, doing)
        if failure is None:
            raise
        raise OpikServerError(f"{failure}; nothing was published", url, failure.status) from None
    report = PublishReport(dashboard_id=board.id, dashboard_changed=changed)
    link = {"id": board.id}
    for target in targets:
        scores, metadata, kept = _merge(target, publication["experiments"][target.name], link)
        if kept:
            report.kept[target.name] = kept
        if dict(scores) == dict(target.scores) and len(scores) == len(target.scores) and metadata == target.metadata:
            report.unchanged.append(target.name)
            continue
        try:
            # One PATCH carries both, so an experiment never holds scores of one comparison and the
            # metadata of another (Opik.update_experiment and log_experiment_scores would be two).
            client.rest_client.experiments.update_experiment(
                target.id, metadata=metadata,
                experiment_scores=[ExperimentScore(name=n, value=v) for n, v in scores])
        except Exception as exc:
            failure = answer_failure(exc, url, f"the update of experiment {target.name!r}")
            if failure is None:
                raise
            done = report.written + report.unchanged
            left = [t.name for t in targets if t.name not in done]
            raise OpikServerError(
                f"{failure}; the comparison (fingerprint {publication['fingerprint']}) is published on "
                f"{', '.join(done) or 'no experiment'} and not on {', '.join(left)}: run the same command again "
                "to finish (publishing is idempotent)", url, failure.status) from None
        report.written.append(target.name)
    return report


def publish_comparison(comparison: Comparison, *, client: Any = None, project_name: str | None = None,
                       store: Any = None, all_scores: bool = False) -> PublishReport:
    """Publish a comparison (``compare_experiments``'s result) onto its experiments on an Opik server.
    ``store``: the local store it was made from (each experiment must have been pushed). Without
    ``client``, the configured server must answer (a one-line error within seconds otherwise).
    ``all_scores``: intervals, p-values and corpus values as experiment scores too (by default each
    compared score adds two columns to Opik's experiments page: its difference and its verdict)."""
    from opik_metrics.compare.publishing.publication import build_publication
    from opik_metrics.experiments.opik_server import PUBLISH_ADVICE, choose_backend, client_url, server_errors

    publication = build_publication(comparison, project_name, all_scores=all_scores)
    if store is not None:
        require_pushed(store, list(publication["experiments"]))
    url = None
    if client is None:
        backend = choose_backend("opik", local_advice=PUBLISH_ADVICE)
        url = backend.url
        with server_errors(url, "connecting the Opik client"):
            client = opik.Opik(project_name=project_name)
    else:
        url = client_url(client)
    return publish(publication, client, project_name=project_name, url=url)
