from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 2

@test_case(points=None, hidden=False)
def test_strategy_for(STRATEGY_FOR):
    values = list(STRATEGY_FOR.values())
    assert ... not in values, 'STRATEGY_FOR 里还有 ...：把 ... 换成类名'
    assert all([isinstance(v, str) and v.endswith('Strategy') for v in values]), '值应是类名，以 Strategy 结尾'

