"""``divmeter data``: the registry of data sets and the atomic, verified fetcher (issue 31).

The public copy of Tevet & Berant's data (``../shared/data/upstream/icl-diversity``, the files of
AMindToThink/icl-diversity byte for byte) is served by a loopback HTTP server started here: no
test reaches the internet. The server can cut a file short, change a byte, stop in the middle
of a file, or answer 404; every failure leaves nothing in the cache (no data-set folder, no
temporary folder), and a second fetch is answered from the cache without a request.
"""

from __future__ import annotations

import hashlib
import http.server
import importlib.util
import json
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from cli_util import run_main
from conftest import SHARED
from divmeter.backends.download import DownloadError
from divmeter.core.errors import InvalidInputError
from divmeter.studies.datasets import (
    DatasetError,
    dataset_path,
    fetch,
    get_dataset,
    list_datasets,
    status,
    verify,
)

UPSTREAM = SHARED / "data" / "upstream" / "icl-diversity"
CLIENTS = ["urllib"] + (["httpx"] if importlib.util.find_spec("httpx") else [])
FIRST = "results/tevet/gpt2/McDiv/mcdiv_all_no_hds_prompt_gen.csv"  # the first file fetched


@pytest.fixture()
def upstream() -> Path:
    if not (UPSTREAM / "manifest.json").is_file():
        pytest.skip(f"the shared upstream copy is not at {UPSTREAM}")
    return UPSTREAM


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DIVMETER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the folder; ``faults`` maps a path to truncate / corrupt / stop / 404."""

    faults: dict[str, str] = {}
    requests: list[str] = []

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        path = self.path.lstrip("/")
        self.requests.append(path)
        fault = self.faults.get(path)
        if fault is None:
            return super().do_GET()
        if fault == "404":
            self.send_error(404)
            return
        data = (Path(self.directory) / path).read_bytes()
        if fault == "truncate":  # a shorter file, honestly announced
            data = data[: len(data) // 2]
        elif fault == "corrupt":  # same size, one byte changed
            data = data[:100] + bytes([data[100] ^ 1]) + data[101:]
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if fault == "stop":  # announces the whole file, sends half, hangs up
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data)


@pytest.fixture()
def server(upstream: Path) -> Iterator[tuple[str, type[Handler]]]:
    handler = type("H", (Handler,), {"faults": {}, "requests": []})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                            partial(handler, directory=str(upstream)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


def _left_behind(cache: Path) -> list[str]:
    root = cache / "data"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def test_manifest_is_the_shared_copys(upstream):
    """The packaged entry lists the upstream manifest's files, sizes and hashes exactly."""
    ds = get_dataset("tevet")
    want = json.loads((upstream / "manifest.json").read_text())
    assert (ds.repository, ds.commit) == (want["repository"], want["commit"])
    assert [(f.path, f.bytes, f.sha256) for f in ds.files] == [
        (f["path"], f["bytes"], f["sha256"]) for f in want["files"]]
    assert ds.url(ds.files[0]) == want["url_template"].format(commit=want["commit"],
                                                              path=ds.files[0].path)
    assert "Tevet & Berant 2021" in ds.citation


@pytest.mark.parametrize("client", CLIENTS)
def test_fetch_over_http_then_from_the_cache(server, cache, upstream, client):
    url, handler = server
    res = fetch("tevet", mirror=url, client=client)
    assert (res.cached, res.path) == (False, cache / "data" / "tevet")
    ds = get_dataset("tevet")
    assert len(handler.requests) == len(ds.files)
    for f in ds.files:  # byte for byte, at the path without the repository prefix
        assert (res.path / ds.local(f)).read_bytes() == (upstream / f.path).read_bytes()
    assert (res.path / "conTest" / "con_test_200_with_hds_prompt_gen.csv").is_file()
    assert verify("tevet") == []
    assert status("tevet")["fetched"] and dataset_path("tevet") == res.path
    again = fetch("tevet", mirror=url, client=client)
    assert again.cached and len(handler.requests) == len(ds.files)  # no request at all
    assert _left_behind(cache) == ["tevet"]


@pytest.mark.parametrize(("fault", "message"), [
    ("truncate", r"tevet: McDiv/mcdiv_all_no_hds_prompt_gen.csv has 347028 bytes, the "
                 r"manifest says 694056 \(a truncated or changed copy\); nothing was written."),
    ("corrupt", r"tevet: McDiv/mcdiv_all_no_hds_prompt_gen.csv has sha256 [0-9a-f]{64}, the "
                r"manifest says 85b0e9dc26abc83f[0-9a-f]{48} \(a corrupted or changed copy\)"),
])
def test_bad_file_is_one_line_and_leaves_nothing(server, cache, fault, message):
    url, handler = server
    handler.faults[FIRST] = fault
    with pytest.raises(DatasetError, match=message) as info:
        fetch("tevet", mirror=url)
    assert "\n" not in str(info.value)
    assert _left_behind(cache) == []  # no data set, no temporary folder
    assert not status("tevet")["fetched"]


@pytest.mark.parametrize("client", CLIENTS)
def test_server_stopping_mid_file_leaves_nothing(server, cache, client):
    url, handler = server
    handler.faults["results/tevet/gpt2/conTest/con_test_200_with_hds_resp_gen.csv"] = "stop"
    with pytest.raises(DownloadError) as info:
        fetch("tevet", mirror=url, client=client)
    msg = str(info.value)
    assert "con_test_200_with_hds_resp_gen.csv" in msg and "\n" not in msg
    assert "the server stopped" in msg and "97936 bytes" in msg  # as announced
    assert _left_behind(cache) == []


def test_http_error_names_the_url(server, cache):
    url, handler = server
    handler.faults[FIRST] = "404"
    with pytest.raises(DownloadError, match=r"mcdiv_all_no_hds_prompt_gen.csv: the server "
                                            r"answered HTTP 404\."):
        fetch("tevet", mirror=url)
    assert _left_behind(cache) == []


def test_failed_refetch_keeps_the_verified_copy(server, cache):
    url, handler = server
    first = fetch("tevet", mirror=url)
    handler.faults[FIRST] = "corrupt"
    with pytest.raises(DatasetError, match="sha256"):
        fetch("tevet", mirror=url, force=True)
    assert verify("tevet") == [] and _left_behind(cache) == ["tevet"]
    assert dataset_path("tevet") == first.path


def test_interrupted_fetch_leaves_nothing(server, cache):
    url, _ = server

    def stop(done: int, total: int) -> None:
        if done > 1_000_000:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fetch("tevet", mirror=url, progress=stop)
    assert _left_behind(cache) == []


def test_from_a_local_copy_and_a_changed_file_in_the_cache(upstream, cache, tmp_path):
    res = fetch("tevet", source=upstream)
    assert not res.cached and res.origin == str(upstream.resolve())
    # a copy of a fetched folder works as a source too
    again = fetch("tevet", source=res.path, force=True)
    assert verify("tevet") == [] and not again.cached
    # a file changed in the cache: verify names it, and the next fetch replaces the copy
    target = res.path / "decTest" / "dec_test_200_with_hds_story_gen.csv"
    target.write_bytes(target.read_bytes()[:-1] + b"?")
    want = next(f.sha256 for f in get_dataset("tevet").files
                if f.path.endswith("dec_test_200_with_hds_story_gen.csv"))
    assert verify("tevet") == [f"decTest/dec_test_200_with_hds_story_gen.csv: sha256 "
                               f"{hashlib.sha256(target.read_bytes()).hexdigest()[:12]}..., "
                               f"the manifest says {want[:12]}..."]
    assert not fetch("tevet", source=upstream).cached and verify("tevet") == []


def test_local_copy_missing_a_file(upstream, cache, tmp_path):
    partial_copy = tmp_path / "copy"
    (partial_copy / "conTest").mkdir(parents=True)
    with pytest.raises(DatasetError, match=r"tevet: McDiv/mcdiv_all_no_hds_prompt_gen.csv is "
                                           r"not in .*copy"):
        fetch("tevet", source=partial_copy)
    assert _left_behind(cache) == []


def test_errors(cache, monkeypatch):
    with pytest.raises(InvalidInputError, match="unknown data set 'tevett'; known: tevet"):
        get_dataset("tevett")
    with pytest.raises(DatasetError, match="data set 'tevet' is not fetched; run divmeter data "
                                           "fetch tevet"):
        dataset_path("tevet")
    monkeypatch.setenv("DIVMETER_CACHE", "off")
    with pytest.raises(DatasetError, match="the divmeter cache is off"):
        fetch("tevet", source=".")
    assert [d.name for d in list_datasets()] == ["tevet"]


def test_cli_fetch_path_verify(server, cache, monkeypatch, capsys):
    url, _ = server
    code, out, err = run_main(monkeypatch, capsys, "data", "fetch", "tevet", "--mirror", url)
    assert code == 0, err
    assert out == f"tevet: {cache / 'data' / 'tevet'} (25 files, 7.4 MB, every sha256 checked)\n"
    assert "cite: Tevet & Berant 2021" in err and f"from: {url}{{path}}" in err
    code, out, _ = run_main(monkeypatch, capsys, "data", "fetch", "tevet", "--mirror", url)
    assert code == 0 and "(already in the cache, verified)" in out
    code, out, _ = run_main(monkeypatch, capsys, "data", "path", "tevet")
    assert (code, out) == (0, f"{cache / 'data' / 'tevet'}\n")
    code, out, _ = run_main(monkeypatch, capsys, "data", "verify")
    assert (code, out) == (0, "tevet: ok (every file matches the manifest)\n")
    (cache / "data" / "tevet" / "run_config.json").unlink()
    code, _, err = run_main(monkeypatch, capsys, "data", "verify", "tevet")
    assert (code, err) == (1, "tevet: run_config.json: missing\n")
    code, out, _ = run_main(monkeypatch, capsys, "data", "list", "-f", "json")
    assert json.loads(out)[0]["name"] == "tevet"


def test_cli_errors_are_one_line(cache, monkeypatch, capsys, tmp_path):
    code, _, err = run_main(monkeypatch, capsys, "data", "path", "tevet")
    assert code == 2 and err.startswith("divmeter: error: data set 'tevet' is not fetched")
    code, _, err = run_main(monkeypatch, capsys, "data", "fetch", "tevet", "--from",
                            str(tmp_path / "nowhere"))
    assert code == 2 and "not a folder" in err and err.count("\n") == 1
