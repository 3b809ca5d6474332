"""The studies' shared MPI helpers (experiments/common.py): who runs what, and what rank 0 gathers."""

from experiments.common import gather_dicts, gather_rows, my_share, start_study


class _FakeComm:
    """gather as MPI's: the root gets every rank's object in rank order, the other ranks None."""

    def __init__(self, rank, parts):
        self.rank, self.parts = rank, parts

    def gather(self, obj, root=0):
        assert root == 0
        return [*self.parts[:self.rank], obj, *self.parts[self.rank + 1:]] if self.rank == 0 else None


def test_round_robin_share_covers_every_scenario_once():
    items = ["a", "b", "c", "d", "e"]
    shares = [my_share(items, r, 2) for r in range(2)]
    assert shares == [[(0, "a"), (2, "c"), (4, "e")], [(1, "b"), (3, "d")]]
    assert my_share(items, 0, 1) == list(enumerate(items))


def test_rank_0_gets_every_row_in_rank_order_and_the_others_none():
    assert gather_rows(None, [1, 2]) == [1, 2]
    assert gather_rows(_FakeComm(0, [None, [3], [4, 5]]), [1, 2]) == [1, 2, 3, 4, 5]
    assert gather_rows(_FakeComm(1, [None, None]), [3]) is None
    assert gather_dicts(_FakeComm(0, [None, {"b": 2, "a": 9}]), {"a": 1}) == {"a": 9, "b": 2}
    assert gather_dicts(_FakeComm(1, [None, None]), {"a": 1}) is None


def test_start_study_makes_the_output_folder(tmp_path):
    out, comm, rank, size = start_study("test", str(tmp_path / "x"), ["--out", str(tmp_path / "y" / "z")])
    assert out == tmp_path / "y" / "z" and out.is_dir() and not (tmp_path / "x").exists()
    assert 0 <= rank < size
