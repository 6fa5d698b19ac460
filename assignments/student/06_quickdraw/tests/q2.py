from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 2

@test_case(points=None, hidden=False)
def test_eval_batch(eval_batch):
    assert eval_batch(258, 4, 64) is not None, 'returns None: replace ... with your code'
    assert eval_batch(256, 4, 64) == 64, '256 = 4 × 64: no short batch'
    assert eval_batch(258, 4, 64) != 64, '258 in 64s leaves 2 examples for 4 replicas'

