from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 3

@test_case(points=None, hidden=False)
def test_warmup_lr(warmup_lr):
    assert warmup_lr(0, 0.001, 4, 100) is not None, 'returns None: replace ... with your code'
    assert abs(warmup_lr(0, 0.001, 4, 100) - 0.001) < 1e-12, 'step 0: the one-device rate'
    assert abs(warmup_lr(100, 0.001, 4, 100) - 0.004) < 1e-12, 'after warm-up: n × base_lr'

