from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 1

@test_case(points=None, hidden=False)
def test_updates_per_epoch(updates_per_epoch):
    assert updates_per_epoch(100, 10) is not None, 'returns None: replace ... with your code'
    assert updates_per_epoch(100, 10) == 10, '100 examples in batches of 10'
    assert updates_per_epoch(101, 10) == 11, 'the short last batch is an update too'

