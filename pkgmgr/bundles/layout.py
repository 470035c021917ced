"""Window layouts (SPEC 8): the strict codec, the topology rules and the scope binding.

`parse_layout` takes the bytes of one window_layout file: exactly one JSON value of at most
4 MiB, no duplicate keys or NaN, valid against `schemas/window_layout.schema.json`, then every
topology rule of SPEC 8. The topology checks only look at values of the right type, so they
run (and never crash) on documents the schema already rejected, and report alongside it.

The document's version is the judging generation's (`internal/windowmanager` `SnapshotVersion`):
2 at v0.2 (`8eeb8a381`), 3 at v0.3-beta.3 (`cff6dae48`), whose documents add a desktop's
`floating_stacks`, a window's `nav_stack` and `pinned` (`types.go`), judged here as
`validate.go` judges them (`validateDesktopFloatingStacks`, `validatePinnedPrefix`,
`validateNavStack`); the schema describes version 2, and these fields are checked before it.
Text is read as Go reads it (`gokeys`): broken UTF-8 and lone surrogate escapes are U+FFFD.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

from pkgmgr.bundles.names import name_problem
from pkgmgr.documents import MIB, DocumentError, integer_problem, load_document
from pkgmgr.errors import Code, Problem, ProblemSink
from pkgmgr.jsonutil import join_key
from pkgmgr.manifest.network import go_trim_space

if TYPE_CHECKING:
    from pkgmgr.bundles.bundle import LayoutSpec

CODE = Code.INVALID_LAYOUT
MAX_LAYOUT_BYTES = 4 * MIB
EDGE_TOLERANCE = 1e-6  # rect bounds and frame overlap: Compozy's weightTolerance (validRect, rectsOverlap)
WEIGHT_TOLERANCE = 1e-6
NODE_FIELDS = {"leaf": ("window_id",), "stack": ("window_ids", "active_id"), "split": ("axis", "children", "weights")}
PLACEMENTS = ("tiled", "stacked", "floating")
DOCUMENT_VERSIONS = {"v0.2": 2, "v0.3-beta.3": 3}  # windowmanager.SnapshotVersion at each generation's commit
MAX_NAV_STACK = 200  # absoluteNavStackLimit (cff6dae48)
STACK_FIELDS = {"id": "string", "window_ids": "strings", "active_id": "string", "rect": "rect", "minimized": "bool"}
_PLACEMENT_RULES = {
    "leaf": ("tiled", "a leaf's window must be tiled"),
    "stack": ("stacked", "a stack's windows must be stacked"),
    "floating": ("floating", "windows in a floating list must have placement 'floating'"),
    "floating stack": ("stacked", "a floating stack's windows must be stacked"),
}


def parse_layout(data: bytes, *, file: str, generation: str = "v0.2") -> tuple[dict[str, Any] | None, list[Problem]]:
    """Decode and validate one window_layout file as Compozy `generation` (v0.2 or
    v0.3-beta.3) reads it.

    Returns the layout dict and no problems, or None and every problem found (code
    `invalid_layout`, `file` as given, keys such as `document.desktops[0].groups[1].frame`).
    Never raises for bad input.
    """
    from pkgmgr.gokeys import go_json_text, go_utf8

    sink = ProblemSink(file, CODE)
    if len(data) <= MAX_LAYOUT_BYTES:  # a larger one is refused by its size below, unread
        data = go_json_text(go_utf8(data)).encode("utf-8")
    try:
        layout, issues = load_document(data, kind="json", max_bytes=MAX_LAYOUT_BYTES)
    except DocumentError as exc:
        sink.add(exc.key, exc.message, line=exc.line)
        return None, sink.problems
    for key, message in issues:
        sink.add(key, message)
    if not isinstance(layout, dict):
        sink.add("", "a window layout is a JSON object")
        return None, sink.problems
    check_layout(sink, layout, generation=generation)
    return (None if sink else layout), sink.problems


def check_layout(sink: ProblemSink, layout: dict[str, Any], *, generation: str = "v0.2") -> None:
    """Schema, then topology, of a decoded layout as `generation` reads it; problems go to `sink`."""
    from pkgmgr.schemas import schema_problems

    version = DOCUMENT_VERSIONS.get(generation, 2)
    described = _as_version_2(sink, layout, version)
    try:
        sink.extend(schema_problems(described, "window_layout", file=sink.file, code=sink.code))
    except RecursionError:
        sink.add("", "nested too deeply to validate")
        return
    _Topology(sink, layout, version).check()


def _as_version_2(sink: ProblemSink, layout: dict[str, Any], version: int) -> dict[str, Any]:
    """The layout as the schema (version 2) describes it: a version-3 document's own fields
    checked for their types here (decoded strictly, as Compozy does) and left out; its version
    checked against the generation's."""
    document = layout.get("document")
    if version == 2 or not isinstance(document, dict):
        return layout
    document = dict(document)
    if document.get("version") == version:
        document["version"] = 2
    elif _is_int(document.get("version")):
        sink.add("document.version", f"must be {version} (the window layout document version of this Compozy "
                                     f"generation), not {document['version']}")
        document["version"] = 2
    desktops = document.get("desktops")
    if isinstance(desktops, list):
        document["desktops"] = [_without(sink, desktop, f"document.desktops[{index}]", {"floating_stacks": _stacks})
                                for index, desktop in enumerate(desktops)]
    windows = document.get("windows")
    if isinstance(windows, dict):
        document["windows"] = {window_id: _without(sink, window, join_key("document.windows", window_id),
                                                   {"nav_stack": _nav_stack, "pinned": _pinned})
                               for window_id, window in windows.items()}
    return {**layout, "document": document}


def _without(sink: ProblemSink, table: Any, key: str, fields: dict[str, Any]) -> Any:
    if not isinstance(table, dict):
        return table
    for name, check in fields.items():
        if name in table and table[name] is not None:  # JSON null: the field is left empty
            check(sink, table[name], f"{key}.{name}")
    return {name: value for name, value in table.items() if name not in fields}


def _pinned(sink: ProblemSink, value: Any, key: str) -> None:
    if not isinstance(value, bool):
        sink.add(key, "must be a boolean")


def _nav_stack(sink: ProblemSink, value: Any, key: str) -> None:
    """`validateNavStack`: at most 200 routes, each decoded as a window's route is."""
    if not isinstance(value, list):
        sink.add(key, "must be an array of routes ({pathname, search})")
        return
    if len(value) > MAX_NAV_STACK:
        sink.add(key, f"holds {len(value)} routes; at most {MAX_NAV_STACK}")
    for index, route in enumerate(value):
        route_key = f"{key}[{index}]"
        if not isinstance(route, dict) or set(route) - {"pathname", "search"}:
            sink.add(route_key, "must be a route: an object of pathname and search only")
            continue
        pathname, search = route.get("pathname"), route.get("search")
        if not isinstance(pathname, str):
            sink.add(f"{route_key}.pathname", "is required (a string)")
        elif problem := route_pathname_problem(pathname):
            sink.add(f"{route_key}.pathname", problem)
        if not isinstance(search, dict):
            sink.add(f"{route_key}.search", "must be a JSON object")


def _stacks(sink: ProblemSink, value: Any, key: str) -> None:
    """The types of a desktop's floating stacks (`FloatingStack`, decoded strictly); their
    topology is `_Topology._floating_stacks`'s."""
    if not isinstance(value, list):
        sink.add(key, "must be an array of floating stacks")
        return
    for index, stack in enumerate(value):
        stack_key = f"{key}[{index}]"
        if not isinstance(stack, dict):
            sink.add(stack_key, "must be a floating stack object")
            continue
        for name in set(stack) - set(STACK_FIELDS):
            sink.add(f"{stack_key}.{name}", f"is not a field of a floating stack ({', '.join(STACK_FIELDS)})")
        for name, kind in STACK_FIELDS.items():
            item = stack.get(name)
            if item is None:
                continue
            ok = {"string": isinstance(item, str), "bool": isinstance(item, bool),
                  "strings": isinstance(item, list) and all(isinstance(v, str) for v in item),
                  "rect": isinstance(item, dict) and set(item) <= {"x", "y", "width", "height"}
                  and all(_is_number(v) for v in item.values())}[kind]
            if not ok:
                sink.add(f"{stack_key}.{name}", f"must be a {kind.removesuffix('s') + ' list' if kind == 'strings' else kind}")


def layout_scope_problems(layout: LayoutSpec, scope: str, workspace_path: str) -> list[Problem]:
    """The scope binding checked at activation: a global activation needs an empty
    `workspace_id`; a workspace activation an empty one or `workspace_path` itself.

    Raises ValueError for a scope other than `global` or `workspace` (a caller's bug).
    """
    document = layout.document.get("document")
    workspace_id = document.get("workspace_id", "") if isinstance(document, dict) else ""
    if scope == "global":
        if workspace_id:
            message = f"is bound to workspace {workspace_id!r}; a global activation needs an empty workspace_id"
            return [Problem(CODE, layout.path, "document.workspace_id", message)]
        return []
    if scope == "workspace":
        if workspace_id and workspace_id != workspace_path:
            message = f"is bound to workspace {workspace_id!r}, not to this workspace {workspace_path!r}"
            return [Problem(CODE, layout.path, "document.workspace_id", message)]
        return []
    raise ValueError(f"unknown scope {scope!r}")


def route_pathname_problem(pathname: str) -> str | None:
    """Compozy's `canonicalRoutePathname`: an application-internal absolute path (one leading
    `/`, no scheme or host), without surrounding whitespace, search or fragment."""
    from urllib.parse import urlsplit

    if not pathname or go_trim_space(pathname) != pathname:
        return "must be a non-empty absolute path without surrounding whitespace"
    if not pathname.startswith("/") or pathname.startswith("//") or urlsplit(pathname).scheme:
        return f"{pathname!r} must be an application-internal absolute path such as /sessions"
    if "?" in pathname or "#" in pathname:
        return f"{pathname!r} must not carry search or fragment data: put the search in route.search"
    return None


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class _Spot:
    """Where a window id is referenced: the desktop, the kind of container, the key path."""

    desktop: str | None
    container: str
    key: str


class _Topology:
    def __init__(self, sink: ProblemSink, layout: dict[str, Any], version: int = 2) -> None:
        self.sink = sink
        self.layout = layout
        self.version = version
        document = layout.get("document")
        self.document: dict[str, Any] = document if isinstance(document, dict) else {}
        windows = self.document.get("windows")
        self.windows: dict[str, Any] = windows if isinstance(windows, dict) else {}
        self.spots: dict[str, list[_Spot]] = {}
        self.desktop_ids: dict[str, str] = {}
        self.group_ids: dict[str, str] = {}
        self.node_ids: dict[str, str] = {}
        self.desktops: list[tuple[dict[str, Any], str, str | None]] = []

    def check(self) -> None:
        self._integer(self.layout.get("version"), "version")
        for field in ("id", "display_name"):  # trimmed by Compozy's validateLayoutResource
            value = self.layout.get(field)
            if isinstance(value, str) and not go_trim_space(value):
                self._add(field, "is required (a non-blank string)")
        layout_id = self.layout.get("id")
        if isinstance(layout_id, str) and go_trim_space(layout_id) and (
                problem := name_problem(go_trim_space(layout_id), "layout id")):
            self._add("id", problem)  # it names the resource (SPEC 9.1 strips it before hashing)
        self._participant_slots(self.layout.get("participant_slots"))
        workspace = self.document.get("workspace_id")
        if isinstance(workspace, str) and workspace:
            # Compozy decodes a bundled layout in the global scope (loadBundleLayout): no binding
            self._add("document.workspace_id", "a packaged layout must not bind a workspace; leave workspace_id empty")
        self._integer(self.document.get("version"), "document.version")
        desktops = self.document.get("desktops")
        if isinstance(desktops, list):
            self._desktops(desktops)
        self._windows()
        self._focus()

    def _add(self, key: str, message: str) -> None:
        self.sink.add(key, message)

    def _participant_slots(self, slots: Any) -> None:
        """`canonicalLayoutParticipantSlots`: each slot trimmed, non-blank, unique once trimmed."""
        if not isinstance(slots, list):
            return
        seen: set[str] = set()
        for index, slot in enumerate(slots):
            if not isinstance(slot, str):
                continue
            trimmed = go_trim_space(slot)
            if not trimmed:
                self._add(f"participant_slots[{index}]", "must not be blank")
            elif trimmed in seen:
                self._add(f"participant_slots[{index}]", f"participant slot {trimmed!r} is duplicated")
            seen.add(trimmed)

    def _integer(self, value: Any, key: str) -> None:
        problem = integer_problem(value)
        if problem:
            self._add(key, problem)

    def _claim(self, seen: dict[str, str], value: Any, key: str, what: str) -> None:
        if not isinstance(value, str):
            return
        first = seen.setdefault(value, key)
        if first != key:
            self._add(key, f"duplicate {what} id {value!r} (first at {first}); {what} ids are unique in the document")

    # -- desktops, groups, nodes ---------------------------------------------------------

    def _desktops(self, desktops: list[Any]) -> None:
        if not desktops:
            self._add("document.desktops", "a layout needs at least one desktop")
        orders: list[int] = []
        orders_known = True
        for index, desktop in enumerate(desktops):
            key = f"document.desktops[{index}]"
            if not isinstance(desktop, dict):
                orders_known = False
                continue
            desktop_id = desktop.get("id")
            self._claim(self.desktop_ids, desktop_id, f"{key}.id", "desktop")
            order = desktop.get("order")
            self._integer(order, f"{key}.order")
            if _is_int(order):
                orders.append(order)
            else:
                orders_known = False
            self._desktop(desktop, key, desktop_id if isinstance(desktop_id, str) else None)
        if orders_known and sorted(orders) != list(range(len(orders))):
            self._add(
                "document.desktops",
                f"desktop order must be contiguous from 0 (0..{len(orders) - 1}, each once); found {sorted(orders)}",
            )

    def _desktop(self, desktop: dict[str, Any], key: str, desktop_id: str | None) -> None:
        self.desktops.append((desktop, key, desktop_id))
        groups = desktop.get("groups")
        frames: list[tuple[str, Any, dict[str, float]]] = []
        for index, group in enumerate(groups if isinstance(groups, list) else []):
            if not isinstance(group, dict):
                continue
            group_key = f"{key}.groups[{index}]"
            self._claim(self.group_ids, group.get("id"), f"{group_key}.id", "group")
            if self._rect(group.get("frame"), f"{group_key}.frame"):
                frames.append((group_key, group.get("id"), group["frame"]))
            self._nodes(group.get("root"), f"{group_key}.root", desktop_id)
        for later in range(len(frames)):
            for earlier in range(later):
                if _overlap(frames[earlier][2], frames[later][2]):
                    first_key, first_id = frames[earlier][0], frames[earlier][1]
                    self._add(
                        f"{frames[later][0]}.frame",
                        f"overlaps the frame of group {first_id!r} ({first_key}); "
                        "the frames of one desktop's groups must not overlap (touching edges is fine)",
                    )
        floating = desktop.get("floating")
        for index, window_id in enumerate(floating if isinstance(floating, list) else []):
            self._place(window_id, desktop_id, "floating", f"{key}.floating[{index}]")
        stacks = desktop.get("floating_stacks") if self.version >= 3 else None
        for index, stack in enumerate(stacks if isinstance(stacks, list) else []):
            if isinstance(stack, dict):
                self._floating_stack(stack, f"{key}.floating_stacks[{index}]", desktop_id)

    def _floating_stack(self, stack: dict[str, Any], key: str, desktop_id: str | None) -> None:
        """`validateDesktopFloatingStacks`: a node id, a normalised rect, two windows or more
        (stacked, on this desktop), the active one among them, pinned windows first."""
        stack_id = stack.get("id")
        if not isinstance(stack_id, str) or not go_trim_space(stack_id):
            self._add(f"{key}.id", "is required (a node id)")
        else:
            self._claim(self.node_ids, stack_id, f"{key}.id", "node")
        rect = stack.get("rect")
        if not isinstance(rect, dict) or not all(_is_number(rect.get(n)) for n in ("x", "y", "width", "height")):
            self._add(f"{key}.rect", "must be a normalised rect")
        else:
            self._rect(rect, f"{key}.rect")
        window_ids = stack.get("window_ids")
        window_ids = [w for w in window_ids if isinstance(w, str)] if isinstance(window_ids, list) else []
        if len(window_ids) < 2:
            self._add(f"{key}.window_ids", f"a stack holds at least 2 windows (it has {len(window_ids)})")
        for index, window_id in enumerate(window_ids):
            self._place(window_id, desktop_id, "floating stack", f"{key}.window_ids[{index}]")
        active = stack.get("active_id")
        if not isinstance(active, str) or active not in window_ids:
            self._add(f"{key}.active_id", "is required: one of the stack's window_ids")
        self._pinned_prefix(window_ids, f"{key}.window_ids")

    def _pinned_prefix(self, window_ids: list[Any], key: str) -> None:
        """`validatePinnedPrefix` (version 3): a stack's pinned windows come first."""
        if self.version < 3:
            return
        unpinned = False
        for index, window_id in enumerate(window_ids):
            window = self.windows.get(window_id) if isinstance(window_id, str) else None
            if not isinstance(window, dict):
                continue
            if window.get("pinned") is not True:
                unpinned = True
            elif unpinned:
                self._add(f"{key}[{index}]", "pinned windows come first in a stack (a contiguous prefix)")

    def _rect(self, rect: Any, key: str) -> bool:
        """Check a normalised rect; True when it is well-typed and valid."""
        if not isinstance(rect, dict):
            return False
        x, y, width, height = (rect.get(name) for name in ("x", "y", "width", "height"))
        if not (_is_number(x) and _is_number(y) and _is_number(width) and _is_number(height)):
            return False
        valid = True
        for name, value in (("x", x), ("y", y)):
            if value < 0:
                self._add(f"{key}.{name}", f"must be >= 0 (rects are normalised to 0..1), got {value}")
                valid = False
        for name, value in (("width", width), ("height", height)):
            if value <= 0:
                self._add(f"{key}.{name}", f"must be > 0, got {value}")
                valid = False
        for origin, extent, total in (("x", "width", x + width), ("y", "height", y + height)):
            if total > 1 + EDGE_TOLERANCE:
                self._add(key, f"{origin} + {extent} = {total:g} exceeds 1 (rects are normalised to 0..1)")
                valid = False
        return valid

    def _nodes(self, root: Any, root_key: str, desktop_id: str | None) -> None:
        pending = [(root, root_key)]
        while pending:
            node, key = pending.pop()
            if not isinstance(node, dict):
                continue
            self._claim(self.node_ids, node.get("id"), f"{key}.id", "node")
            kind = node.get("kind")
            if not isinstance(kind, str) or kind not in NODE_FIELDS:
                continue
            own = NODE_FIELDS[kind]
            for other, fields in NODE_FIELDS.items():
                for name in fields if other != kind else ():
                    if name in node:
                        self._add(f"{key}.{name}", f"is a field of {other} nodes; a {kind} node has only {', '.join(own)}")
            for name in own:
                if name not in node:
                    self._add(key, f"a {kind} node needs {name!r}")
            if kind == "leaf":
                self._place(node.get("window_id"), desktop_id, "leaf", f"{key}.window_id")
            elif kind == "stack":
                self._stack(node, key, desktop_id)
            else:
                children = node.get("children")
                if isinstance(children, list):
                    self._split(node, key, children)
                    pending.extend((child, f"{key}.children[{index}]") for index, child in reversed(list(enumerate(children))))

    def _stack(self, node: dict[str, Any], key: str, desktop_id: str | None) -> None:
        window_ids = node.get("window_ids")
        if not isinstance(window_ids, list):
            return
        if len(window_ids) < 2:
            self._add(f"{key}.window_ids", f"a stack holds at least 2 windows (it has {len(window_ids)})")
        for index, window_id in enumerate(window_ids):
            self._place(window_id, desktop_id, "stack", f"{key}.window_ids[{index}]")
        active = node.get("active_id")
        if isinstance(active, str) and active not in window_ids:
            self._add(f"{key}.active_id", f"{active!r} is not one of the stack's window_ids")
        self._pinned_prefix(window_ids, f"{key}.window_ids")

    def _split(self, node: dict[str, Any], key: str, children: list[Any]) -> None:
        if len(children) < 2:
            self._add(f"{key}.children", f"a split has at least 2 children (it has {len(children)})")
        axis = node.get("axis")
        for index, child in enumerate(children):
            if isinstance(child, dict) and child.get("kind") == "split" and isinstance(axis, str) and child.get("axis") == axis:
                self._add(
                    f"{key}.children[{index}].axis",
                    f"splits the same axis ({axis}) as its parent split; flatten it into the parent",
                )
        weights = node.get("weights")
        if not isinstance(weights, list):
            return
        summable = len(weights) == len(children)
        if not summable:
            self._add(f"{key}.weights", f"needs one weight per child: {len(weights)} weight(s) for {len(children)} children")
        for index, weight in enumerate(weights):
            if not _is_number(weight):
                summable = False
            elif not (math.isfinite(weight) and weight > 0):
                self._add(f"{key}.weights[{index}]", f"must be a finite positive number, got {weight}")
                summable = False
        if summable and abs(math.fsum(weights) - 1) > WEIGHT_TOLERANCE:
            self._add(f"{key}.weights", f"must sum to 1 (within {WEIGHT_TOLERANCE:g}); they sum to {math.fsum(weights):.9g}")

    def _place(self, window_id: Any, desktop_id: str | None, container: str, key: str) -> None:
        if isinstance(window_id, str):
            self.spots.setdefault(window_id, []).append(_Spot(desktop_id, container, key))

    # -- windows and focus ---------------------------------------------------------------

    def _windows(self) -> None:
        for window_id, window in self.windows.items():
            key = join_key("document.windows", window_id)
            if not isinstance(window, dict):
                continue
            own_id = window.get("id")
            if isinstance(own_id, str) and own_id != window_id:
                self._add(f"{key}.id", f"{own_id!r} must equal the window's key {window_id!r} in document.windows")
            desktop_id = window.get("desktop_id")
            known_desktop = isinstance(desktop_id, str) and desktop_id in self.desktop_ids
            if isinstance(desktop_id, str) and not known_desktop:
                self._add(f"{key}.desktop_id", f"{desktop_id!r} names no desktop of this layout")
            placement = window.get("placement")
            if window.get("minimized") is True and placement in PLACEMENTS and placement != "floating":
                self._add(f"{key}.minimized", f"a minimised window must be floating (its placement is {placement!r})")
            self._rect(window.get("floating_rect"), f"{key}.floating_rect")
            route = window.get("route")
            if isinstance(route, dict) and isinstance(route.get("pathname"), str):
                problem = route_pathname_problem(route["pathname"])
                if problem:
                    self._add(f"{key}.route.pathname", problem)
            spots = self.spots.get(window_id, [])
            if not spots:
                self._add(key, f"window {window_id!r} is not placed: put it in exactly one leaf, stack or desktop floating list")
            for spot in spots[1:]:
                self._add(spot.key, f"window {window_id!r} appears more than once (first at {spots[0].key}); every window appears exactly once")
            for spot in spots:
                if known_desktop and spot.desktop is not None and spot.desktop != desktop_id:
                    self._add(spot.key, f"window {window_id!r} is placed on desktop {spot.desktop!r} but its desktop_id is {desktop_id!r}")
                wanted, rule = _PLACEMENT_RULES[spot.container]
                if placement in PLACEMENTS and placement != wanted:
                    self._add(spot.key, f"{rule}; window {window_id!r} has placement {placement!r}")
        for window_id, spots in self.spots.items():
            if window_id not in self.windows:
                for spot in spots:
                    self._add(spot.key, f"window {window_id!r} is not defined in document.windows")

    def _focus(self) -> None:
        for desktop, key, desktop_id in self.desktops:
            purpose = desktop.get("purpose")
            if purpose == "standard" and "focus_owner" in desktop:
                self._add(f"{key}.focus_owner", "a standard desktop has no focus_owner (only a focus desktop has one)")
            elif purpose == "focus":
                owner = desktop.get("focus_owner")
                if "focus_owner" not in desktop:
                    self._add(key, "a focus desktop needs a focus_owner, one of its windows")
                elif isinstance(owner, str) and desktop_id is not None and not self._on_desktop(owner, desktop_id):
                    self._add(f"{key}.focus_owner", f"{owner!r} is not one of this desktop's windows")

    def _on_desktop(self, window_id: str, desktop_id: str) -> bool:
        if any(spot.desktop == desktop_id for spot in self.spots.get(window_id, [])):
            return True
        window = self.windows.get(window_id)
        return isinstance(window, dict) and window.get("desktop_id") == desktop_id


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    """Whether two rects share area; shared edges (within EDGE_TOLERANCE) do not count."""
    return (
        a["x"] < b["x"] + b["width"] - EDGE_TOLERANCE
        and b["x"] < a["x"] + a["width"] - EDGE_TOLERANCE
        and a["y"] < b["y"] + b["height"] - EDGE_TOLERANCE
        and b["y"] < a["y"] + a["height"] - EDGE_TOLERANCE
    )
