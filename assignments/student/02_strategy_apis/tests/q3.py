from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 2

@test_case(points=None, hidden=False)
def test_renamed(RENAMED):
    assert ... not in RENAMED.values(), 'RENAMED still has ...: replace ... with the new names'
    assert RENAMED['strategy.experimental_run_v2'] == 'strategy.run', 'experimental_run_v2'

