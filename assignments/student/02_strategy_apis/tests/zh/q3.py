from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 2

@test_case(points=None, hidden=False)
def test_renamed(RENAMED):
    assert ... not in RENAMED.values(), 'RENAMED 里还有 ...：把 ... 换成新名字'
    assert RENAMED['strategy.experimental_run_v2'] == 'strategy.run', 'experimental_run_v2 的新名字'

